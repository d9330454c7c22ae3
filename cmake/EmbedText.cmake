# Script mode: writes OUT, a C++ file defining sluice::internal::VAR as the raw text of IN.
file(READ ${IN} content)
set(delim "SLUICE_EMBED")
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n#include <string_view>\n"
     "namespace sluice::internal {\nextern const std::string_view ${VAR};\n"
     "const std::string_view ${VAR} = R\"${delim}(${content})${delim}\";\n}  // namespace sluice::internal\n")
