# Helpers the bench scripts share; sourced after they cd to the repository's root:
#   . bench/lib.sh

# A free loopback TCP port (free when asked: bind it soon).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# CPU clock ticks (user + system) a process has used so far: ticks PID.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# A field of a JSON object, empty if absent: json '{"a":1}' a.
json() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"; }

# A number field of a one-line JSON object on stdin: echo '{"a":1}' | field a.
field() { sed "s/.*\"$1\":\([0-9.]*\).*/\1/"; }
