package catalog

import (
	"database/sql"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/internal/runtest"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775}, {5, 10, 0.2366, 0.7634}, {10, 10, 0.7225, 1}, {0, 0, 0, 1},
	} {
		lo, hi := Wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			t.Errorf("Wilson(%d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func count(t *testing.T, c *Catalog, table string) int {
	t.Helper()
	var n int
	if err := c.db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// judgedRun stores a generated clean run, judged as lockbench check judges.
func judgedRun(t testing.TB, dir string, spec simulate.Spec) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runtest.WriteGenerated(t, dir, spec)
	if _, err := verdict.Check(dir, verdict.Options{LinearTimeout: time.Minute, Lease: backends.LeaseOf}); err != nil {
		t.Fatal(err)
	}
}

// TestImportIsIdempotent: importing a run twice keeps one run and one
// judgment; a check that rewrites its results (same revision) updates that
// judgment; a judgment by another revision is kept beside it.
func TestImportIsIdempotent(t *testing.T) { eachBackend(t, testImportIsIdempotent) }

func testImportIsIdempotent(t *testing.T, b backend) {
	root := t.TempDir()
	judgedRun(t, filepath.Join(root, "a"), simulate.Spec{Events: 2000, Clients: 3})
	judgedRun(t, filepath.Join(root, "b"), simulate.Spec{Events: 2000, Clients: 3, Stale: true})
	c, err := Open(b.fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if n, _, err := c.Import(root); err != nil || n != 2 {
			t.Fatalf("import: %d runs, %v", n, err)
		}
	}
	if r, j := count(t, c, "runs"), count(t, c, "judgments"); r != 2 || j != 2 {
		t.Fatalf("%d runs, %d judgments after two imports, want 2 and 2", r, j)
	}
	if _, err := verdict.Check(filepath.Join(root, "a"), verdict.Options{LinearTimeout: time.Minute, Lease: backends.LeaseOf}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Import(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if j := count(t, c, "judgments"); j != 2 {
		t.Errorf("%d judgments after a re-check by the same revision, want 2", j)
	}
	res, err := rundir.ReadResults(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	res.Lockbench = "v0.0.0-older revision abc"
	if err := rundir.WriteJSON(filepath.Join(root, "a"), rundir.ResultsFile, res); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Import(root); err != nil {
		t.Fatal(err)
	}
	if r, j := count(t, c, "runs"), count(t, c, "judgments"); r != 2 || j != 3 {
		t.Errorf("%d runs, %d judgments after another revision's judgment, want 2 and 3", r, j)
	}
	gs, err := c.Compare(Query{By: []string{"backend"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Runs != 2 || gs[0].Invalid != 1 || gs[0].Anomalies["stale_write"] != 1 {
		t.Fatalf("groups %+v, want one redis group of 2 runs, 1 invalid with a stale write", gs)
	}
}

// TestRefusesWhatIsNoCatalog: a file that is not SQLite, an SQLite
// database that is no catalog, and a catalog of a newer schema are each
// refused and left byte for byte as they were.
func TestRefusesWhatIsNoCatalog(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("this is not a database, but it is long enough to look like one's header......"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(dir, "newer.db")
	c, err := Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.Exec(`UPDATE catalog SET value = '99' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, p := range []string{garbage, other, newer} {
		before, _ := os.ReadFile(p)
		c, err := Open(p)
		if err == nil {
			c.Close()
			t.Errorf("%s opened", p)
			continue
		}
		if !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v, want ErrBad", p, err)
		}
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("%s was changed by the refusal", p)
		}
	}
}

// TestMigratesSchemaOne opens the committed schema-1 catalog (one run,
// one judgment) with a test-only second migration: the rows survive and
// the new column has its default.
func TestMigratesSchemaOne(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "schema1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), File)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// One test-only migration past this lockbench's.
	next := append(slices.Clone(migrations), `ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'none'`)
	want := strconv.Itoa(len(next))
	c, err := open(path, next)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var schema, note string
	if err := c.db.QueryRow(`SELECT value FROM catalog WHERE key = 'schema'`).Scan(&schema); err != nil || schema != want {
		t.Fatalf("schema %q (%v), want %s", schema, err, want)
	}
	if err := c.db.QueryRow(`SELECT note FROM runs`).Scan(&note); err != nil || note != "none" {
		t.Errorf("note %q (%v)", note, err)
	}
	if r, j := count(t, c, "runs"), count(t, c, "judgments"); r != 1 || j != 1 {
		t.Errorf("%d runs, %d judgments after the migration, want 1 and 1", r, j)
	}
	// This lockbench, which knows one schema, refuses the migrated file.
	c2, err := Open(path)
	if err == nil {
		c2.Close()
		t.Errorf("a schema-%s catalog opened by a lockbench of schema %d", want, Schema())
	}
}

// TestConcurrentWriters: four writers, each with its own connection as
// parallel cells have, record 50 runs each at once; none is lost.
func TestConcurrentWriters(t *testing.T) { eachBackend(t, testConcurrentWriters) }

func testConcurrentWriters(t *testing.T, b backend) {
	src := filepath.Join(t.TempDir(), "run")
	judgedRun(t, src, simulate.Spec{Events: 500, Clients: 2})
	e, err := Judged(src)
	if err != nil {
		t.Fatal(err)
	}
	path := b.fresh(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4*50)
	for w := range 4 {
		wg.Go(func() {
			c, err := Open(path)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := range 50 {
				e := e
				e.Test.Config.Seed = int64(w*1000 + i)
				errs <- c.Record(e)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, j := count(t, c, "runs"), count(t, c, "judgments"); r != 200 || j != 200 {
		t.Errorf("%d runs, %d judgments, want 200 and 200", r, j)
	}
}
