package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/internal/runtest"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// htmlTree is a results root of judged generated runs: two backends
// (their test.json's backend renamed after the check), clean and stale,
// at two TTLs, recorded in the root's catalog. The first run's directory
// is then deleted, and the second's report.html.
func htmlTree(t *testing.T) (root string, gone string) {
	t.Helper()
	root = t.TempDir()
	n := 0
	for _, backend := range []string{"redis", "etcd"} {
		for _, ttl := range []time.Duration{time.Second, 2 * time.Second} {
			for _, stale := range []bool{false, true} {
				n++
				dir := filepath.Join(root, "gen", strconv.Itoa(n))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				runtest.WriteGenerated(t, dir, simulate.Spec{Events: 1500, Clients: 3, Stale: stale})
				if _, err := verdict.Check(dir, verdict.Options{LinearTimeout: time.Minute, Lease: backends.LeaseOf}); err != nil {
					t.Fatal(err)
				}
				test, _, err := rundir.ReadTest(dir)
				if err != nil {
					t.Fatal(err)
				}
				test.Config.Backend, test.Config.TTL, test.Config.Seed = backend, config.Duration(ttl), int64(n)
				test.RunID += "-" + strconv.Itoa(n)
				if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// A check writes each run's report; the second run's is removed.
	if err := os.Remove(filepath.Join(root, "gen", "2", rundir.HTMLFile)); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(filepath.Join(root, catalog.File))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Import(root); err != nil {
		t.Fatal(err)
	}
	gone = filepath.Join(root, "gen", "1")
	abs, err := filepath.Abs(gone)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	return root, abs
}

// compareHTML runs lockbench compare --format html with args and returns
// the page it wrote and the line it printed.
func compareHTML(t *testing.T, args ...string) (page, printed string) {
	t.Helper()
	cmd := newCompareCmd()
	cmd.SetArgs(append([]string{"--format", "html"}, args...))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	err = cmd.Execute()
	os.Stdout = stdout
	w.Close()
	var out bytes.Buffer
	out.ReadFrom(r)
	if err != nil {
		t.Fatal(err)
	}
	printed = strings.TrimSpace(out.String())
	data, err := os.ReadFile(printed)
	if err != nil {
		t.Fatalf("the printed path %q: %v", printed, err)
	}
	return string(data), printed
}

var (
	hrefs    = regexp.MustCompile(`href="([^"]*)"`)
	external = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)
)

func TestCompareHTML(t *testing.T) {
	root, gone := htmlTree(t)
	db := filepath.Join(root, catalog.File)
	page, printed := compareHTML(t, "--catalog", db, "--by", "backend,nemesis,fence")
	if printed != filepath.Join(root, rundir.CompareFile) {
		t.Errorf("wrote %s, want compare.html in the results root", printed)
	}
	if external.MatchString(page) {
		t.Errorf("the page loads something from elsewhere: %q", external.FindString(page))
	}
	for _, id := range []string{"plot-acquire-cdf", "plot-detection", "plot-unavailability"} {
		i := strings.Index(page, `<figure id="`+id+`">`)
		if i < 0 || !strings.HasPrefix(page[i+len(`<figure id="`+id+`">`):], "<svg") {
			t.Errorf("no SVG plot %s", id)
		}
	}
	if strings.Contains(page, "plot-ttl") {
		t.Error("a TTL plot without --by ttl")
	}
	c, err := catalog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gs, err := c.Compare(catalog.Query{By: []string{"backend", "nemesis", "fence"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2", len(gs))
	}
	for i, g := range gs {
		start := strings.Index(page, `<tr class="group" id="row-g`+strconv.Itoa(i+1)+`">`)
		if start < 0 {
			t.Fatalf("no row for group %v", g.Key)
		}
		tr := page[start : start+strings.Index(page[start:], "</tr>")]
		for _, want := range append([]string{"<td>" + g.Key["backend"] + "</td>"}, cellsOf(g)...) {
			if !strings.Contains(tr, ">"+want+"<") {
				t.Errorf("group %v: row lacks %q:\n%s", g.Key, want, tr)
			}
		}
	}
	base := filepath.Dir(printed)
	linked := 0
	for _, m := range hrefs.FindAllStringSubmatch(page, -1) {
		h := m[1]
		if strings.HasPrefix(h, "#") {
			if !strings.Contains(page, `id="`+h[1:]+`"`) {
				t.Errorf("link %s leads nowhere on the page", h)
			}
			continue
		}
		u, err := url.Parse(h)
		if err != nil || u.Scheme != "" || filepath.IsAbs(u.Path) {
			t.Errorf("run link %q is not relative", h)
			continue
		}
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(u.Path))); err != nil {
			t.Errorf("run link %q: %v", h, err)
		}
		linked++
	}
	if linked != 7 {
		t.Errorf("%d run links, want 7 (8 runs, one deleted)", linked)
	}
	if !strings.Contains(page, `href="gen/3/report.html"`) {
		t.Error("a run with a report does not link to it")
	}
	if !strings.Contains(page, `href="gen/2/"`) || !strings.Contains(page, "(no report)") {
		t.Error("the run without a report does not link to its directory")
	}
	if !strings.Contains(page, `<li class="id">`+gone+` <span class="missing">missing</span>`) {
		t.Errorf("the deleted run %s is not marked missing", gone)
	}
}

func cellsOf(g catalog.Group) []string {
	var out []string
	for _, c := range columns {
		out = append(out, c.of(g))
	}
	return out
}

func TestCompareHTMLByTTL(t *testing.T) {
	root, _ := htmlTree(t)
	out := filepath.Join(t.TempDir(), "elsewhere.html")
	page, printed := compareHTML(t, "--catalog", filepath.Join(root, catalog.File), "--by", "backend,ttl", "--out", out)
	if printed != out {
		t.Errorf("wrote %s, want %s", printed, out)
	}
	for _, id := range []string{"plot-ttl-invalid", "plot-ttl-unavailability"} {
		if !strings.Contains(page, `<figure id="`+id+`"><svg`) {
			t.Errorf("no SVG plot %s with --by ttl", id)
		}
	}
	if n := strings.Count(page, `<tr class="group"`); n != 4 {
		t.Errorf("%d rows, want 4 (2 backends × 2 TTLs)", n)
	}
	if n := strings.Count(page, "<svg"); n != 5 {
		t.Errorf("%d plots, want 5", n)
	}
}
