// libpq, PostgreSQL's C client (Debian: libpq-dev; headers under /usr/include/postgresql,
// found through pkg-config's libpq.pc).
#include <libpq-fe.h>
