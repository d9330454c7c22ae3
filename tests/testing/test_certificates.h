// MakeTestCertificates(): a throwaway CA and, signed by it, a server certificate for 127.0.0.1 and
// localhost and a client certificate, made by the openssl command line at test time, for TLS
// tests. Files in `dir`: ca.pem, server.pem, server.key, client.pem, client.key.
//
// Thread safety: writes only under `dir`.
#ifndef SLUICE_TESTS_TESTING_TEST_CERTIFICATES_H_
#define SLUICE_TESTS_TESTING_TEST_CERTIFICATES_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sluice::testing {

// Returns false when openssl is unavailable or fails (tests then skip).
inline bool MakeTestCertificates(const std::filesystem::path& dir) {
  const std::string d = dir.string();
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "set -e; cd '" + d + "'; exec >openssl.log 2>&1;" + "openssl req -x509 " + key +
      " -keyout ca.key -out ca.pem -days 2 -subj /CN=sluice-test-ca;" + "openssl req " + key +
      " -keyout server.key -out server.csr -subj /CN=localhost;" +
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext;" +
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out server.pem -days 2 -extfile server.ext;" +
      "openssl req " + key + " -keyout client.key -out client.csr -subj /CN=sluice-client;" +
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out client.pem -days 2";
  return std::system(("sh -c \"" + script + "\"").c_str()) == 0;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_TEST_CERTIFICATES_H_
