#!/bin/sh
# A command worker for `queue work` (or [[workers]] in queue.toml): it
# "sends" the welcome email of one job. The README runs it with
#
#   ./queue work --queue email -- ./examples/send-welcome.sh
#
# The contract (docs/workers.md): the job's payload arrives on stdin, the
# job in QUEUE_JOB_ID, QUEUE_JOB_KIND, QUEUE_QUEUE, QUEUE_ATTEMPT and
# QUEUE_MAX_ATTEMPTS. Exit 0 completes the job and stdout becomes its
# result (JSON if it parses); exit 65 fails it for good (dead-letter queue);
# any other exit fails it and it is retried with backoff. Plain sh, no jq.
set -eu

payload=$(cat)
# The payload is {"to": "ada@example.com", ...}; pick "to" out of it.
to=$(printf '%s' "$payload" | sed -n 's/.*"to"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')

if [ -z "$to" ]; then
  echo "payload has no \"to\" address: $payload" >&2
  exit 65 # permanent: retrying will not add an address
fi

# A real worker would send the email here, and exit non-zero if the mail
# server refused (the job is then retried). Keep it idempotent: a job can
# run twice (see docs/workers.md, "Idempotent handlers").
echo "sending welcome email to $to (job $QUEUE_JOB_ID, attempt $QUEUE_ATTEMPT of $QUEUE_MAX_ATTEMPTS)" >&2

printf '{"sent_to":"%s","job":%s}\n' "$to" "$QUEUE_JOB_ID"
