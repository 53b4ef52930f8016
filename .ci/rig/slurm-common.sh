# Sourced by slurm-up.sh and slurm-cluster-up.sh: the slurm.conf lines both
# rigs share (not accounting: each rig says its own, so no key is set twice).
# Usage: slurm_common_conf STATE_DIR MUNGE_SOCKET
slurm_common_conf() {
  local dir=$1 sock=$2
  cat <<CFG
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
ProctrackType=proctrack/linuxproc
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
KillWait=5
MinJobAge=300
CFG
}
