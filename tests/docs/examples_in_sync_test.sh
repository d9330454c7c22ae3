#!/usr/bin/env bash
# The examples in the public headers' comments, README.md and docs/*.md are the compiled ones:
#   - each header's `Example` comment blocks, joined, equal the lines between its
#     `// [include/sluice/...]` markers in tests/docs/*_test.cc;
#   - each block of README.md or docs/*.md announced by `<!-- compiled: FILE [MARK] -->` equals
#     the lines between `// [MARK]` (or, in CMake files, `# [MARK]`) marker lines in FILE
#     (examples/consumer/, built by the install tests), all such stretches of FILE joined.
# Leading whitespace is ignored on both sides. Usage: examples_in_sync_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?source dir}
cd "$src"
status=0

# header_examples HEADER: the comment lines of its Example blocks ("//   code"), without "//".
header_examples() {
  awk '/^\/\/ Example/ { inside = 1; next }
       inside && /^\/\/   / { sub(/^\/\/ +/, ""); print; next }
       { inside = 0 }' "$1"
}
# marked FILE MARK: the lines between "// [MARK]" (or "# [MARK]") marker lines, without leading
# whitespace.
marked() {
  awk -v mark="// [$2]" -v hash_mark="# [$2]" '{ line = $0; sub(/^[ \t]+/, "", line) }
       line == mark || line == hash_mark { inside = !inside; next }
       inside { print line }' "$1"
}
compare() {  # compare WHAT EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then
    echo "OUT OF SYNC: $1"
    diff <(echo "$2") <(echo "$3") || true
    status=1
  fi
}

for header in include/sluice/*.h include/sluice/http/*.h; do
  expected=$(header_examples "$header")
  [ -n "$expected" ] || continue
  actual=$(for t in tests/docs/*_test.cc; do marked "$t" "$header"; done)
  if [ -z "$actual" ]; then
    echo "NOT COMPILED: $header has an Example that no tests/docs/*_test.cc holds"
    status=1
    continue
  fi
  compare "$header (header comment vs tests/docs)" "$expected" "$actual"
done

compiled_blocks=0
for doc in README.md docs/*.md; do
  while IFS= read -r line; do
    file=$(sed -E 's/.*compiled: ([^ ]+) \[(.*)\].*/\1/' <<<"$line")
    mark=$(sed -E 's/.*compiled: ([^ ]+) \[(.*)\].*/\2/' <<<"$line")
    expected=$(awk -v l="$line" 'found && /^```/ { if (inside) exit; inside = 1; next }
                                 found && inside { sub(/^[ \t]+/, ""); print }
                                 $0 == l { found = 1 }' "$doc")
    if [ ! -f "$file" ]; then
      echo "MISSING: $doc names $file, which does not exist"
      status=1
      continue
    fi
    actual=$(marked "$file" "$mark")
    if [ -z "$actual" ]; then
      echo "NOT COMPILED: $doc [$mark]: no '// [$mark]' or '# [$mark]' markers in $file"
      status=1
      continue
    fi
    compare "$doc [$mark] vs $file" "$expected" "$actual"
    compiled_blocks=$((compiled_blocks + 1))
  done < <(grep -E '^<!-- compiled: ' "$doc" || true)
done

[ $status -eq 0 ] && echo "header examples and $compiled_blocks compiled doc blocks match the code"
exit $status
