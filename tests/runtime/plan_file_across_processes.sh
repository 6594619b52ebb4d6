#!/bin/sh
# The ctest plan_file_across_processes: a program measures a plan and writes the plan file when
# it ends; a second process loads that plan and runs it at its first contraction. The thread
# count is pinned (the shared-machine back-off is off): a plan is keyed by the threads it runs
# on, and this test is about the file, not about a busy machine. On failure it shows what each
# run printed and what the file holds.
program="$1"
mkdir -p plan_file_across_processes.d && cd plan_file_across_processes.d || exit 1
show() {
  echo "plan_file_across_processes: $1"
  for f in plans.txt first.txt second.txt; do
    [ -f "$f" ] && { echo "--- $f"; cat "$f"; }
  done
  exit 1
}
export TENEX_SHARED_MACHINE=0 OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
rm -f plans.txt first.txt second.txt plans.txt.tmp-*
TENEX_PLAN_FILE=plans.txt TENEX_PLAN_SEARCH=measure "$program" > first.txt || show "the first run failed"
grep -q '^end 1$' plans.txt || show "the first run did not write one plan"
! ls plans.txt.tmp-* > /dev/null 2>&1 || show "a temporary file was left behind"
TENEX_PLAN_FILE=plans.txt TENEX_PLAN_SEARCH=amortized "$program" > second.txt || show "the second run failed"
grep -q 'loaded 1 plan' second.txt || show "the second run did not load the plan"
grep -q 'contraction 1 ran: .*\[loaded\]' second.txt || show "the first contraction did not run the loaded plan"
echo "plan_file_across_processes: passed"
