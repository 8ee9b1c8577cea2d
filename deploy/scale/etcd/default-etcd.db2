# /etc/default/etcd on db2: one member of the three-member etcd cluster Patroni keeps its
# leader lock in (Debian's etcd.service reads this file). Two members of three are a quorum:
# etcd, and so Patroni, survives the loss of any one node. Peer and client traffic stays on
# the private network 10.0.0.0/24 (add TLS, ETCD_*_CERT_FILE, where that network is shared).
ETCD_NAME=db2
ETCD_DATA_DIR=/var/lib/etcd/baton
ETCD_LISTEN_PEER_URLS=http://10.0.0.12:2380
ETCD_INITIAL_ADVERTISE_PEER_URLS=http://10.0.0.12:2380
ETCD_LISTEN_CLIENT_URLS=http://10.0.0.12:2379,http://127.0.0.1:2379
ETCD_ADVERTISE_CLIENT_URLS=http://10.0.0.12:2379
ETCD_INITIAL_CLUSTER=db1=http://10.0.0.11:2380,db2=http://10.0.0.12:2380,db3=http://10.0.0.13:2380
ETCD_INITIAL_CLUSTER_TOKEN=baton-etcd
ETCD_INITIAL_CLUSTER_STATE=new
