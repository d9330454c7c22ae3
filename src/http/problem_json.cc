#include "src/http/problem_json.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::http::internal {
namespace {

boost::json::string_view Json(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace

std::string ProblemJson(std::string_view type, std::string_view title, int status,
                        std::string_view detail, std::span<const std::string_view> violated) {
  boost::json::object problem;
  problem["type"] = Json(type);
  problem["title"] = Json(title);
  problem["status"] = status;
  problem["detail"] = Json(detail);
  if (!violated.empty()) {
    boost::json::array policies;
    for (std::string_view name : violated) policies.emplace_back(Json(name));
    problem["violated-policies"] = std::move(policies);
  }
  return boost::json::serialize(problem);
}

}  // namespace sluice::http::internal
