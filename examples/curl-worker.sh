#!/bin/sh
# The whole life of a job with nothing but sh and curl: submit, claim,
# heartbeat, complete, then read the result. Run it against a server:
#
#   ./queue serve &
#   sh examples/curl-worker.sh                 # QUEUE_SERVER, QUEUE_TOKEN if set
#
# A worker in any language does the same over HTTP (docs/api.md). It exits
# 0 when the job ended done with its result, 1 otherwise.
set -eu

server=${QUEUE_SERVER:-http://127.0.0.1:8080}
case "$server" in *://*) ;; *) server="http://$server" ;; esac
queue=${QUEUE:-curl-example}

api() { # api METHOD PATH [BODY]: prints the answer, fails on an HTTP error
  if [ -n "${QUEUE_TOKEN:-}" ]; then
    set -- "$@" -H "Authorization: Bearer $QUEUE_TOKEN"
  fi
  method=$1 path=$2
  shift 2
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    body=$1
    shift
    curl -sS --fail-with-body -X "$method" "$server$path" -H 'Content-Type: application/json' -d "$body" "$@"
  else
    curl -sS --fail-with-body -X "$method" "$server$path" "$@"
  fi
}

# field NAME: the first number or string NAME holds in the JSON on stdin.
field() { sed -n "s/^[^{]*{.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -n1; }

# 1. Submit a job (201 with the job).
job=$(api POST /api/jobs "{\"queue\":\"$queue\",\"kind\":\"greet\",\"payload\":{\"name\":\"Ada\"}}")
id=$(printf '%s' "$job" | field id)
echo "submitted job $id" >&2

# 2. Claim it as a worker: the job comes with a lease (waits up to 5s).
claimed=$(api POST "/api/queues/$queue/claim" '{"worker_id":"curl-example","wait":"5s"}')
lease=$(printf '%s' "$claimed" | field lease)
[ -n "$lease" ] || { echo "nothing to claim: $claimed" >&2; exit 1; }
echo "claimed job $id with lease $lease" >&2

# 3. Heartbeat while working (every third of the job's timeout), then
#    complete with the same lease and a result.
api POST "/api/jobs/$id/heartbeat" "{\"lease\":$lease}" >/dev/null
api POST "/api/jobs/$id/complete" "{\"lease\":$lease,\"result\":{\"greeting\":\"hello, Ada\"}}" >/dev/null

# 4. Read it back: done, with the result.
final=$(api GET "/api/jobs/$id")
status=$(printf '%s' "$final" | field status)
echo "job $id is $status: $final"
[ "$status" = done ]
