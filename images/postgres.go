package images

import "strings"

// Postgres is the image of the PostgreSQL server. Like the JVM image its
// tag is a hash of the node base and of what is installed over it: it runs
// no lockbench code, so a new lockbench binary never rebuilds it.
const Postgres Kind = "postgres"

// PostgresPackages are Debian bookworm's PostgreSQL 15 server and its
// client (psql, for readiness and for reading the store's audit table back),
// and pgbouncer (1.18), the transaction pooler of the pgbouncer-session
// variant. It is always installed (a few hundred kilobytes, in the one
// image build) and runs only in that variant's runs.
var PostgresPackages = []string{"postgresql-15", "postgresql-client-15", "pgbouncer"}

// PostgresBin is where Debian installs the server's programs, and
// PostgresData the database cluster the image holds, initialised at build
// (initdb takes seconds a run need not wait for); a run passes its
// settings on the server's command line.
const (
	PostgresBin  = "/usr/lib/postgresql/15/bin/"
	PostgresData = "/var/lib/postgresql/lockbench"
)

// postgresDockerfile installs PostgresPackages over the node base, which
// brings the tools faults need (ip, iptables, ps). Debian's package creates
// a cluster of its own (with Debian's configuration layout), which the
// image removes; its cluster trusts every connection from the run's
// private network: the server holds nothing but the run's lock and data.
func postgresDockerfile() string {
	asPostgres := "setpriv --reuid=postgres --regid=postgres --init-groups "
	return "FROM " + BaseTag + "\n" +
		"RUN apt-get update && apt-get install -y --no-install-recommends " + strings.Join(PostgresPackages, " ") +
		" && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/lib/postgresql/15/main /etc/postgresql/15/main\n" +
		"RUN install -d -o postgres -g postgres " + PostgresData + " && " + asPostgres + PostgresBin + "initdb -D " + PostgresData +
		" -A trust -U postgres --locale=C -E UTF8 --no-sync >/dev/null && echo 'host all all 0.0.0.0/0 trust' >> " + PostgresData + "/pg_hba.conf\n"
}
