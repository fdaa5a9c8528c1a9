package report

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"

	"github.com/lockbench/lockbench/rundir"
)

func copyRun(t *testing.T, from, to string, files ...string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// indexTree is a results tree with a checked and reported run, a run
// never checked, a run whose files are corrupt, and clutter.
func indexTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	good := filepath.Join(root, "redis-counter-pause-fence-none", "20261202T094515.549Z")
	copyRun(t, filepath.Join("testdata", "invalid"), good, rundir.TestFile, rundir.HistoryFile, rundir.StoreFile, rundir.ResultsFile)
	in, err := Load(good, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(good, in); err != nil {
		t.Fatal(err)
	}
	copyRun(t, filepath.Join("testdata", "valid"), filepath.Join(root, "redis-counter-pause-fence-all", "20261202T094544.709Z"), rundir.TestFile, rundir.HistoryFile)
	corrupt := filepath.Join(root, "redis-counter-pause-fence-all", "20261203T080000.000Z")
	if err := os.MkdirAll(corrupt, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range map[string]string{rundir.TestFile: `{"name": "redis-counter`, rundir.ResultsFile: `not json`, rundir.HistoryFile: ""} {
		if err := os.WriteFile(filepath.Join(corrupt, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "redis-counter-pause-fence-all", "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("clutter"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestIndex(t *testing.T) {
	root := indexTree(t)
	runs, err := Index(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("got %d runs, want 3: %+v", len(runs), runs)
	}
	// Newest first: the corrupt run's directory name is its only date.
	corrupt, valid, invalid := runs[0], runs[1], runs[2]
	if corrupt.Path != "redis-counter-pause-fence-all/20261203T080000.000Z" || corrupt.Verdict != VerdictUnreadable ||
		len(corrupt.Problems) != 2 || corrupt.Start.IsZero() || corrupt.Report {
		t.Errorf("corrupt run: %+v", corrupt)
	}
	if valid.Verdict != VerdictUnchecked || valid.Fence != "all" || valid.Nemesis != "pause" || valid.Report || len(valid.Problems) != 0 {
		t.Errorf("unchecked run: %+v", valid)
	}
	if invalid.Test != "redis-counter-pause-fence-none" || invalid.Verdict != "invalid" || invalid.Backend != "redis" ||
		invalid.Seed != 2 || !invalid.Report || invalid.Start.Format("15:04:05") != "09:45:15" {
		t.Errorf("checked run: %+v", invalid)
	}

	var page bytes.Buffer
	if err := WriteIndex(&page, root, runs); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{`href="redis-counter-pause-fence-none/20261202T094515.549Z/report.html"`,
		`class="verdict invalid"`, `class="verdict unchecked"`, `class="verdict unreadable"`, "unexpected end of JSON input"} {
		if !strings.Contains(html, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if n := strings.Count(html, `<tr class="run">`); n != 3 {
		t.Errorf("index lists %d runs, want 3", n)
	}
}

func TestIndexMissingRoot(t *testing.T) {
	if _, err := Index(filepath.Join(t.TempDir(), "nothing")); err == nil {
		t.Error("no error for a missing results tree")
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(indexTree(t)))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "lockbench runs") {
		t.Errorf("GET /: %d", code)
	}
	if code, body := get("/redis-counter-pause-fence-none/20261202T094515.549Z/report.html"); code != http.StatusOK || !strings.Contains(body, `id="ov-timeline"`) {
		t.Errorf("GET report.html: %d", code)
	}
	if code, _ := get("/../../etc/passwd"); code == http.StatusOK {
		t.Error("served a file outside the tree")
	}
}

// A valid run whose faults reached no holder is listed as weak evidence.
func TestIndexWeakEvidence(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "redis-counter-pause-fence-all", "20261202T094544.709Z")
	copyRun(t, filepath.Join("testdata", "valid"), run, rundir.TestFile, rundir.HistoryFile)
	res := `{"verdict": "valid", "evidence": "` + checkers.WeakEvidence + `"}`
	if err := os.WriteFile(filepath.Join(run, rundir.ResultsFile), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Index(root)
	if err != nil || len(runs) != 1 || runs[0].Evidence != checkers.WeakEvidence {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	var page bytes.Buffer
	if err := WriteIndex(&page, root, runs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), checkers.WeakEvidence) {
		t.Error("the index does not say the run is weak evidence")
	}
}
