#!/bin/sh
# A rank that starts every kind of helper real jobs start, then ends as
# asked (the helpers of one rank carry its GPULAUNCH_JOB_ID and RANK, or the
# marker gl-survivor-JOBID-rRANK in argv). Usage: helpers_job.sh WORK_DIR END
#   END: exit0 | fail (rank 1 exits 3, the others wait) | wait (every rank
#   waits to be stopped) | deaf (every rank ignores SIGTERM and waits)
work=$1 end=$2
echo "$GPULAUNCH_JOB_ID" > "$work/job-id.$RANK"
( trap '' TERM; exec sleep 300 ) &                                      # a child that ignores SIGTERM
( setsid sleep 301 & )                                                  # a setsid double-forked daemon
( setsid sh -c 'exec < /dev/null > /dev/null 2>&1; exec sleep 302' & )  # daemon(3)-style: its streams closed
sh -c 'sh -c "sleep 303 & wait" & wait' &                               # a three-deep tree
sleep 304 &                                                             # a helper holding stdout and stderr
sh -c 'while :; do sleep 305 & sleep 0.2; done' > /dev/null 2>&1 &      # one that keeps re-forking
# One that clears its environment, leaves its session and keeps re-forking:
# no GPULAUNCH_JOB_ID to find it by, only the marker in its argv (argv[0]
# of the loop and of each child it starts).
( env -i /usr/bin/setsid /bin/bash -c 'while :; do (exec -a "$0" sleep 306) & sleep 0.2; done' \
    "gl-survivor-$GPULAUNCH_JOB_ID-r$RANK" < /dev/null > /dev/null 2>&1 & )
echo "rank $RANK started its helpers" > "$work/started.$RANK"
case $end in
  exit0) exit 0 ;;
  fail) [ "$RANK" = 1 ] && { sleep 0.5; exit 3; }; exec sleep 300 ;;
  wait)  # notes when the stop reached it (the file's time: no command to fork, which the stop would hit too)
    trap ': > "$work/stopped.$RANK"; exit 143' TERM INT
    sleep 300 & wait ;;
  deaf) trap '' TERM; sleep 300; exit 0 ;;
esac
