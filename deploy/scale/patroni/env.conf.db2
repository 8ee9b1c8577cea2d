# /etc/patroni/env.conf on db2 (mode 0600, owner postgres): this node's identity and the
# cluster's passwords, read by patroni@15-baton.service. Replace every CHANGE-ME, the same
# on all three nodes.
PATRONI_NAME=db2
PATRONI_RESTAPI_LISTEN=10.0.0.12:8008
PATRONI_RESTAPI_CONNECT_ADDRESS=10.0.0.12:8008
PATRONI_POSTGRESQL_LISTEN=10.0.0.12:5432
PATRONI_POSTGRESQL_CONNECT_ADDRESS=10.0.0.12:5432
PATRONI_SUPERUSER_PASSWORD=CHANGE-ME-superuser
PATRONI_REPLICATION_PASSWORD=CHANGE-ME-replication
PATRONI_REWIND_PASSWORD=CHANGE-ME-rewind
