#!/usr/bin/env bash
# The same bring-up as `dfslab up` (3 nodes in network namespaces, NMONS MONs, MGR,
# 3 BlueStore OSDs on sparse files, MDS + CephFS, pools dfslab + rbd, replica 2), done
# the way one would by hand with the ceph CLI. Prints seconds to HEALTH_OK with all PGs
# active+clean, then tears everything down. Usage: bringup_by_hand.sh [1|3]
set -euo pipefail
NMONS=${1:-1}
T0=$(date +%s.%N)
D=$(mktemp -d /tmp/byhand.XXXX)
P=byh$$
NODES=(n1 n2 n3)
declare -A IP=([n1]=10.78.0.10 [n2]=10.78.0.11 [n3]=10.78.0.12 [cl]=10.78.0.200)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in hub "${NODES[@]}" cl; do ip netns del "$P-$n" 2>/dev/null || true; done
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add $P-hub; ip -n $P-hub link add br0 type bridge; ip -n $P-hub link set br0 up
i=0
for n in "${NODES[@]}" cl; do
  ip netns add $P-$n; ip -n $P-$n link set lo up
  ip -n $P-hub link add v$i type veth peer name eth0 netns $P-$n
  ip -n $P-hub link set v$i master br0 up
  ip -n $P-$n addr add ${IP[$n]}/24 dev eth0; ip -n $P-$n link set eth0 up
  i=$((i+1))
done
on() { local n=$1; shift; nsenter --net=/run/netns/$P-$n -- "$@"; }
# Background a daemon so that $! is the daemon itself (nsenter execs it), not a subshell.
spawn() { local n=$1; shift; nsenter --net=/run/netns/$P-$n -- "$@" & PIDS+=($!); }

FSID=$(uuidgen)
MONS=(a b c); MONHOST=""; MAPARGS=()
for ((m=0; m<NMONS; m++)); do
  ip=${IP[${NODES[$m]}]}
  MONHOST+="${MONHOST:+,}[v2:$ip:3300,v1:$ip:6789]"
  MAPARGS+=(--addv ${MONS[$m]} "[v2:$ip:3300,v1:$ip:6789]")
done
mkdir -p $D/{data,run,logs}
cat > $D/ceph.conf <<CONF
[global]
fsid = $FSID
mon host = $MONHOST
public network = 10.78.0.0/24
keyring = $D/data/\$name/keyring
admin socket = $D/run/\$cluster-\$name.asok
run dir = $D/run
log file = $D/logs/\$cluster-\$name.log
mon data = $D/data/\$name
mgr data = $D/data/\$name
osd data = $D/data/\$name
mds data = $D/data/\$name
auth allow insecure global id reclaim = false
osd pool default size = 2
osd pool default pg num = 16
osd pool default pg autoscale mode = off
mon allow pool delete = true
mon data avail warn = 5
mgr stats period = 1
[mon]
paxos propose interval = 0.2
[osd]
bluestore block create = true
bluestore block size = 4294967296
bluestore fsck on mkfs = false
CONF
for n in 0 1 2; do printf '[osd.%d]\n\tcrush location = root=default host=%s\n' $n ${NODES[$n]} >> $D/ceph.conf; done
C=(-c $D/ceph.conf -k $D/admin.keyring)
exec 2>$D/logs/script.err  # the CLI's keyring-search chatter

ceph-authtool --create-keyring $D/admin.keyring --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool --create-keyring $D/mon.keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool $D/mon.keyring --import-keyring $D/admin.keyring >/dev/null
monmaptool --create --fsid $FSID "${MAPARGS[@]}" $D/monmap >/dev/null
for ((m=0; m<NMONS; m++)); do
  on ${NODES[$m]} ceph-mon -c $D/ceph.conf --mkfs -i ${MONS[$m]} --monmap $D/monmap --keyring $D/mon.keyring
  spawn ${NODES[$m]} ceph-mon -c $D/ceph.conf -f -i ${MONS[$m]}
done

mkdir -p $D/data/mgr.x
on cl ceph "${C[@]}" auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' > $D/data/mgr.x/keyring
spawn n1 ceph-mgr -c $D/ceph.conf -f -i x --public-addr ${IP[n1]}

for n in 0 1 2; do
  U=$(uuidgen); K=$(ceph-authtool --gen-print-key)
  echo "{\"cephx_secret\": \"$K\"}" > $D/osd$n.json
  on cl ceph "${C[@]}" osd new $U $n -i $D/osd$n.json >/dev/null
  mkdir -p $D/data/osd.$n
  on ${NODES[$n]} ceph-osd -c $D/ceph.conf -i $n --mkfs --osd-uuid $U --key $K 2>/dev/null
  printf '[osd.%d]\n\tkey = %s\n' $n $K > $D/data/osd.$n/keyring
  spawn ${NODES[$n]} ceph-osd -c $D/ceph.conf -f -i $n --public-addr ${IP[${NODES[$n]}]}
done

for pool in dfslab rbd; do
  on cl ceph "${C[@]}" osd pool create $pool 16 >/dev/null 2>&1
done
on cl ceph "${C[@]}" osd pool application enable dfslab rados >/dev/null 2>&1
on cl ceph "${C[@]}" osd pool application enable rbd rbd >/dev/null 2>&1

mkdir -p $D/data/mds.a
on cl ceph "${C[@]}" auth get-or-create mds.a mon 'allow profile mds' osd 'allow *' mds 'allow' mgr 'allow profile mds' > $D/data/mds.a/keyring
spawn n3 ceph-mds -c $D/ceph.conf -f -i a --public-addr ${IP[n3]}
on cl ceph "${C[@]}" osd pool create cephfs_metadata 16 >/dev/null 2>&1
on cl ceph "${C[@]}" osd pool create cephfs_data 16 >/dev/null 2>&1
on cl ceph "${C[@]}" fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>&1

# HEALTH_OK and every PG of every pool active+clean (pool PG totals vs the PG map).
while true; do
  h=$(on cl ceph "${C[@]}" health 2>/dev/null || true)
  want=$(on cl ceph "${C[@]}" osd pool ls detail -f json 2>/dev/null | python3 -c 'import json,sys; print(sum(p["pg_num"] for p in json.load(sys.stdin)))' || echo -1)
  clean=$(on cl ceph "${C[@]}" pg stat -f json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("pg_summary",d); print(sum(s["num"] for s in d.get("num_pg_by_state",[]) if s["name"]=="active+clean"))' || echo -2)
  [ "$h" = HEALTH_OK ] && [ "$want" = "$clean" ] && break
  sleep 0.5
done
echo "$(echo "$(date +%s.%N) - $T0" | bc)"
