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
	"time"

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
	tree, err := Index(root)
	if err != nil {
		t.Fatal(err)
	}
	runs := tree.Runs
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
	if err := WriteIndex(&page, root, tree); err != nil {
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
	tree, err := Index(root)
	if err != nil || len(tree.Runs) != 1 || tree.Runs[0].Evidence != checkers.WeakEvidence {
		t.Fatalf("runs %+v, %v", tree.Runs, err)
	}
	var page bytes.Buffer
	if err := WriteIndex(&page, root, tree); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), checkers.WeakEvidence) {
		t.Error("the index does not say the run is weak evidence")
	}
}

// servedTree is a results tree as people gather them: a checked run three
// levels deep, a matrix, a run still going and one whose harness died.
func servedTree(t *testing.T) (root, deep string) {
	t.Helper()
	root = t.TempDir()
	deep = filepath.Join(root, "ci", "nightly", "redis-counter-pause-fence-none", "20261202T094515.549Z")
	copyRun(t, filepath.Join("testdata", "invalid"), deep, rundir.TestFile, rundir.HistoryFile, rundir.StoreFile, rundir.ResultsFile)
	in, err := Load(deep, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(deep, in); err != nil {
		t.Fatal(err)
	}
	mx := filepath.Join(root, "matrix", "20261202T100000.000Z")
	if err := os.MkdirAll(mx, 0o755); err != nil {
		t.Fatal(err)
	}
	matrix := `{"started": "2026-12-02T10:00:00Z", "seconds": 93.4, "runs_per_cell": 1,
		"cells": [{"outcome": "met"}, {"outcome": "met"}, {"outcome": "contradicted"}], "exit": 1}`
	if err := os.WriteFile(filepath.Join(mx, rundir.MatrixJSON), []byte(matrix), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mx, "matrix.md"), []byte("# Matrix\n\n| cell | outcome |\n|---|---|\n| redis-pause | met |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Runs without an end: one whose history grew just now, one whose
	// history stopped growing an hour ago.
	for _, r := range []struct {
		dir string
		age time.Duration
	}{{"20261203T080000.000Z", 0}, {"20261203T070000.000Z", time.Hour}} {
		dir := filepath.Join(root, "redis-counter-none-fence-none", r.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		test := `{"name": "redis-counter-none-fence-none", "run_id": "ab12cd34", "config": {"backend": "redis", "nemesis": ["none"], "fence": "none"}}`
		hist := filepath.Join(dir, rundir.HistoryFile)
		if err := os.WriteFile(filepath.Join(dir, rundir.TestFile), []byte(test), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hist, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		then := time.Now().Add(-r.age)
		if err := os.Chtimes(hist, then, then); err != nil {
			t.Fatal(err)
		}
	}
	return root, deep
}

func TestIndexAnyDepth(t *testing.T) {
	root, _ := servedTree(t)
	tree, err := Index(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Runs) != 3 || len(tree.Matrices) != 1 {
		t.Fatalf("got %d runs and %d matrices, want 3 and 1: %+v", len(tree.Runs), len(tree.Matrices), tree)
	}
	running, cut, deep := tree.Runs[0], tree.Runs[1], tree.Runs[2]
	if running.Verdict != VerdictRunning || cut.Verdict != VerdictCutShort || running.RunID != "ab12cd34" {
		t.Errorf("runs without an end: %+v, %+v", running, cut)
	}
	if deep.Path != "ci/nightly/redis-counter-pause-fence-none/20261202T094515.549Z" || deep.Verdict != "invalid" ||
		deep.RunID != "811e8435" || deep.Duration.Round(time.Millisecond) != 20153*time.Millisecond || !deep.Stories {
		t.Errorf("deep run: %+v", deep)
	}
	total := 0
	for _, c := range deep.Anomalies {
		total += c.N
	}
	if total != 7 {
		t.Errorf("deep run's anomalies: %+v, want 7 in all", deep.Anomalies)
	}
	m := tree.Matrices[0]
	if m.Path != "matrix/20261202T100000.000Z" || m.Cells != 3 || m.Outcomes["met"] != 2 || m.Outcomes["contradicted"] != 1 ||
		m.Exit != 1 || m.Duration != 93*time.Second {
		t.Errorf("matrix: %+v", m)
	}
}

func TestHandlerRendersMarkdown(t *testing.T) {
	root, _ := servedTree(t)
	srv := httptest.NewServer(Handler(root))
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(body)
	}
	run := "/ci/nightly/redis-counter-pause-fence-none/20261202T094515.549Z/"
	page := get(run + rundir.AnomaliesFile)
	if n := strings.Count(page, `<svg class="sequence"`); n == 0 || strings.Contains(page, "diagram not drawn") {
		t.Errorf("anomalies page draws %d diagrams", n)
	}
	if !strings.Contains(page, "<h2>Incident 1") || !strings.Contains(page, "sequenceDiagram") {
		t.Error("anomalies page lacks its incidents or the diagrams' source")
	}
	if raw := get(run + rundir.AnomaliesFile + "?raw"); !strings.HasPrefix(raw, "# Anomalies") || !strings.Contains(raw, "```mermaid") {
		t.Errorf("raw anomalies.md: %.80q", raw)
	}
	if mx := get("/matrix/20261202T100000.000Z/matrix.md"); !strings.Contains(mx, "<td>redis-pause</td>") {
		t.Error("matrix.md's table is not rendered")
	}
	resp, err := http.Get(srv.URL + "/../../etc/passwd.md")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("rendered a file outside the tree")
	}
}
