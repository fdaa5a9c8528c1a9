package catalog

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// PostgresEnv names a PostgreSQL server (a postgres:// URL of a role that
// may create databases) the tests also run against; without it they run
// against SQLite only. e2e's TestPostgresCatalog covers the command line
// against the project's PostgreSQL image.
const PostgresEnv = "LOCKBENCH_TEST_POSTGRES"

// backend makes catalogs of one kind: fresh is where a new, empty one
// opens.
type backend struct {
	name  string
	fresh func(t *testing.T) string
}

var sqliteBackend = backend{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), File) }}

// catalogBackends are SQLite, and PostgreSQL when PostgresEnv names a server.
func catalogBackends() []backend {
	bs := []backend{sqliteBackend}
	if base := os.Getenv(PostgresEnv); base != "" {
		bs = append(bs, backend{"postgres", func(t *testing.T) string { return freshDatabase(t, base) }})
	}
	return bs
}

// eachBackend runs test against each backend, as a subtest.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range catalogBackends() {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// freshDatabase creates a database of its own for a test on the server at
// base, dropped when the test ends, and returns its URL.
func freshDatabase(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "lockbench_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		admin.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// dump is every table of the postgres database at rawURL with its rows,
// to show a refusal changed nothing.
func dump(t *testing.T, rawURL string) map[string][]string {
	t.Helper()
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	tables.Close()
	out := map[string][]string{}
	for _, n := range names {
		rows, err := db.Query(`SELECT CAST(t AS TEXT) FROM ` + n + ` t`)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = []string{}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			out[n] = append(out[n], r)
		}
		rows.Close()
		slices.Sort(out[n])
	}
	return out
}

// TestPostgresRefusesWhatIsNoCatalog: a database with tables but no
// catalog, and a catalog of a newer schema, are each refused and left as
// they were.
func TestPostgresRefusesWhatIsNoCatalog(t *testing.T) {
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + " names no PostgreSQL server")
	}
	other := freshDatabase(t, base)
	db, err := sql.Open("pgx", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x BIGINT); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := freshDatabase(t, base)
	c, err := Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.Exec(`UPDATE catalog SET value = '99' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, p := range []string{other, newer} {
		before := dump(t, p)
		c, err := Open(p)
		if err == nil {
			c.Close()
			t.Errorf("%s opened", p)
			continue
		}
		if !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v, want ErrBad", p, err)
		}
		if after := dump(t, p); !mapsEqual(before, after) {
			t.Errorf("%s was changed by the refusal: %v, then %v", p, before, after)
		}
	}
}

// TestPostgresMigrates opens a current catalog with a test-only next
// migration: the rows survive and the new column has its default.
func TestPostgresMigrates(t *testing.T) {
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + " names no PostgreSQL server")
	}
	path := freshDatabase(t, base)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// One test-only migration past this lockbench's.
	next := append(slices.Clone(migrations), `ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'none'`)
	want := strconv.Itoa(len(next))
	c, err = openPostgres(path, next)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var schema string
	if err := c.db.QueryRow(`SELECT value FROM catalog WHERE key = 'schema'`).Scan(&schema); err != nil || schema != want {
		t.Fatalf("schema %q (%v), want %s", schema, err, want)
	}
	if c2, err := Open(path); err == nil {
		c2.Close()
		t.Errorf("a schema-%s catalog opened by a lockbench of schema %d", want, Schema())
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}
