#!/usr/bin/env bash
# Accounting for the 4-node cluster of slurm-cluster-up.sh, which sources
# this file before it starts slurmctld: a MariaDB server and slurmdbd, both
# Debian's, inside node1's network namespace, their data under $S/db and
# their pids in $RIG/pids (rig-down.sh stops them).
#
#   slurm_accounting_available     whether the packages are here (mariadbd,
#                                  slurmdbd, the mysql storage plugin)
#   slurm_accounting_up S SOCK     starts both; S is the cluster's state
#                                  folder, SOCK its munge socket. Prints the
#                                  slurm.conf lines that point slurmctld at
#                                  slurmdbd, or fails with the reason.
# slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF, so both
# files live in S. Connections to slurmdbd take the munge socket from
# AccountingStoragePass (../shared/notes/test-rig.md, section 9).

slurm_accounting_available() {
  command -v mariadbd > /dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || return 1
  command -v mariadb-install-db > /dev/null 2>&1 || return 1
  command -v slurmdbd > /dev/null 2>&1 || [ -x /usr/sbin/slurmdbd ] || return 1
  ls /usr/lib/*/slurm-wlm/accounting_storage_mysql.so > /dev/null 2>&1 || return 1
  id mysql > /dev/null 2>&1
}

slurm_accounting_up() {
  local s=$1 sock=$2 db=$1/db
  local port=3307 pass
  pass=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  mkdir -p "$db/data" "$db/run"
  chown -R mysql:mysql "$db"
  mariadb-install-db --user=mysql --datadir="$db/data" --auth-root-authentication-method=socket \
    --skip-test-db > "$s/log/mariadb-install.log" 2>&1 || { echo "mariadb-install-db failed: $s/log/mariadb-install.log" >&2; return 1; }
  ip netns exec "${NSP}n1" /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$db/data" \
    --socket="$db/run/mysqld.sock" --pid-file="$db/run/mysqld.pid" --bind-address=127.0.0.1 --port=$port \
    --log-error="$s/log/mariadb.log" --skip-name-resolve --innodb-buffer-pool-size=64M \
    --innodb-lock-wait-timeout=900 > /dev/null 2>&1 &
  for _ in $(seq 1 300); do [ -S "$db/run/mysqld.sock" ] && [ -s "$db/run/mysqld.pid" ] && break; sleep 0.1; done
  [ -s "$db/run/mysqld.pid" ] || { echo "mariadbd did not start: $s/log/mariadb.log" >&2; return 1; }
  echo "pid $(cat "$db/run/mysqld.pid")" >> "$RIG/pids"
  mariadb --socket="$db/run/mysqld.sock" -u root <<SQL || { echo "could not create slurmdbd's database user" >&2; return 1; }
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
  cat > "$s/slurmdbd.conf" <<CFG
AuthType=auth/munge
AuthInfo=socket=$sock
DbdHost=node1
DbdPort=6819
SlurmUser=root
PidFile=$s/slurmdbd.pid
LogFile=$s/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$port
StorageUser=slurm
StoragePass=$pass
StorageLoc=slurm_acct_db
CFG
  chmod 600 "$s/slurmdbd.conf"
  in_host 1 env SLURM_CONF="$s/slurm.conf" slurmdbd > /dev/null 2>&1
  for _ in $(seq 1 300); do [ -s "$s/slurmdbd.pid" ] && break; sleep 0.1; done
  [ -s "$s/slurmdbd.pid" ] || { echo "slurmdbd did not start: $s/log/slurmdbd.log" >&2; return 1; }
  echo "pid $(cat "$s/slurmdbd.pid")" >> "$RIG/pids"
  cat <<CFG
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=node1
AccountingStoragePort=6819
AccountingStoragePass=$sock
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu
CFG
}
