package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/internal/runtest"
	"github.com/lockbench/lockbench/verdict"
)

// catalogTestLabel marks the containers TestPostgresCatalog starts; its
// value is one test's, so that no run mistakes another's for its own.
const catalogTestLabel = "lockbench-e2e-catalog"

// startPostgres starts the project's PostgreSQL image, its port published
// on the loopback only, removed when the test ends, and returns the URL of
// its database once it answers.
func startPostgres(t *testing.T) string {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx := context.Background()
	id := make([]byte, 6)
	rand.Read(id)
	port := nat.Port("5432/tcp")
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image: images.Postgres.Latest(),
		// As the postgres backend starts it: PID 1, the image's trusting
		// data directory, reachable beyond the container's own loopback.
		Cmd: []string{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", images.PostgresBin + "postgres",
			"-D", images.PostgresData, "-c", "listen_addresses=*"},
		Labels:       map[string]string{catalogTestLabel: hex.EncodeToString(id)},
		ExposedPorts: nat.PortSet{port: {}},
	}, &container.HostConfig{
		PortBindings: nat.PortMap{port: {{HostIP: "127.0.0.1"}}},
	}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the postgres container: %v", err)
		}
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	bound := info.NetworkSettings.Ports[port]
	if len(bound) == 0 {
		t.Fatal("the postgres container's port is not published")
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", bound[0].HostPort)
	db := pgOpen(t, url)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := db.Ping()
		if err == nil {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func pgOpen(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// catalogCmd runs import or compare, which take no --results.
func catalogCmd(t *testing.T, args ...string) result {
	t.Helper()
	return runBinary(t, time.Minute, nil, args...)
}

// rowsOf is each catalog table's rows, as text, sorted.
func rowsOf(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range []string{"catalog", "runs", "judgments", "faults"} {
		rows, err := db.Query(`SELECT CAST(t AS TEXT) FROM ` + table + ` t`)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = []string{}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		slices.Sort(out[table])
	}
	return out
}

// TestPostgresCatalog keeps the catalog in the project's PostgreSQL: import
// records two judged runs, importing them again changes no row, compare
// counts them as their results.json judged them, and a catalog of a newer
// schema is refused (254, one line) and left as it was.
func TestPostgresCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	url := startPostgres(t)
	db := pgOpen(t, url)
	root := t.TempDir()
	for name, spec := range map[string]simulate.Spec{
		"clean": {Events: 1000, Clients: 3},
		"stale": {Events: 1000, Clients: 3, Stale: true},
	} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		runtest.WriteGenerated(t, dir, spec)
		if _, err := verdict.Check(dir, verdict.Options{LinearTimeout: time.Minute, Lease: backends.LeaseOf}); err != nil {
			t.Fatal(err)
		}
	}
	var first map[string][]string
	for i := range 2 {
		r := catalogCmd(t, "import", "--catalog", url, root)
		if r.exit != 0 || !strings.HasPrefix(r.stdout, "2 runs recorded in ") {
			t.Fatalf("import #%d: exit %d, %q", i+1, r.exit, r.stdout)
		}
		if strings.Contains(r.stdout, "password") {
			t.Errorf("import printed the URL's password")
		}
		rows := rowsOf(t, db)
		if len(rows["runs"]) != 2 || len(rows["judgments"]) != 2 {
			t.Fatalf("import #%d: %d runs, %d judgments, want 2 and 2", i+1, len(rows["runs"]), len(rows["judgments"]))
		}
		if first == nil {
			first = rows
		} else if !equalRows(first, rows) {
			t.Errorf("a second import changed the rows:\n%v\nthen\n%v", first, rows)
		}
	}

	r := catalogCmd(t, "compare", "--catalog", url, "--by", "backend", "--format", "json")
	if r.exit != 0 {
		t.Fatalf("compare: exit %d", r.exit)
	}
	var out struct {
		Groups []catalog.Group `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("compare --format json: %v", err)
	}
	invalid := 0
	var dirs []string
	for _, name := range []string{"clean", "stale"} {
		dir := filepath.Join(root, name)
		if readReport(t, dir).Verdict == checkers.Invalid {
			invalid++
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, abs)
	}
	if invalid != 1 {
		t.Fatalf("%d of the generated runs judged invalid, want the stale one", invalid)
	}
	if len(out.Groups) != 1 {
		t.Fatalf("%d groups, want one (redis)", len(out.Groups))
	}
	g := out.Groups[0]
	if g.Key["backend"] != "redis" || g.Runs != 2 || g.Invalid != invalid || !slices.Equal(g.RunsAt, dirs) {
		t.Errorf("group %v: %d runs, %d invalid, at %v; want redis, 2 runs, %d invalid, at %v", g.Key, g.Runs, g.Invalid, g.RunsAt, invalid, dirs)
	}

	if _, err := db.Exec(`UPDATE catalog SET value = '99' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	before := rowsOf(t, db)
	r = catalogCmd(t, "compare", "--catalog", url)
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.exit != 254 || len(lines) != 1 || !strings.Contains(r.stderr, "schema 99") {
		t.Errorf("compare of a schema-99 catalog: exit %d, %q; want 254 and one line naming schema 99", r.exit, r.stderr)
	}
	if after := rowsOf(t, db); !equalRows(before, after) {
		t.Errorf("the refusal changed the catalog:\n%v\nthen\n%v", before, after)
	}
}

func equalRows(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
