package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

// recordRuns records invalid invalid and valid valid runs of redis under
// a pause with the given fence into the catalog at path, each with n
// uncontended acquires of ms on one host class. Verdicts and metrics are
// crafted: compare reads only what the catalog keeps.
func recordRuns(t *testing.T, path, fence string, invalid, valid, n int, ms float64) {
	t.Helper()
	c, err := catalog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range invalid + valid {
		v := checkers.Valid
		if i < invalid {
			v = checkers.Invalid
		}
		seed := time.Now().UnixNano()
		cfg := config.Config{Backend: "redis", Workload: "register", Nemesis: []string{"pause"}, Fence: store.Fence(fence),
			Store: config.DefaultStore, Variant: config.Correct, Seed: seed}
		var m metrics.Run
		for range n {
			m.AcquireUncontended.Add(ms, false)
		}
		e := catalog.Entry{
			Test: rundir.Test{Name: "t", RunID: fmt.Sprint(seed), Start: time.Unix(0, seed), Config: cfg,
				HostClass: &rundir.HostClass{Cores: 2, Engine: "27.0", StorageDriver: "overlay2"}},
			Dir: "runs/" + fmt.Sprint(seed), Metrics: m,
			Results: rundir.Results{Lockbench: "v0.0.0 revision abc", Verdict: v, Checked: time.Now()},
		}
		if err := c.Record(e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompareBaselineExitCodes: a lost detection (9/10 to 1/10 where the
// matrix expects redis under a pause without a fence to be invalid) fails
// by default; a latency change (p99 2 ms against 1 ms, 200 samples a side)
// only with --fail-on latency; an unknown kind or two baselines are usage
// errors.
func TestCompareBaselineExitCodes(t *testing.T) {
	dir := t.TempDir()
	base, now := filepath.Join(dir, "base.db"), filepath.Join(dir, "now.db")
	recordRuns(t, base, "none", 9, 1, 0, 0)
	recordRuns(t, now, "none", 1, 9, 0, 0)
	recordRuns(t, base, "all", 0, 1, 200, 1)
	recordRuns(t, now, "all", 0, 1, 200, 2)
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--baseline-catalog", base}, exitInvalid},
		{[]string{"--baseline-catalog", base, "--fail-on", "new-invalid"}, exitValid},
		{[]string{"--baseline-catalog", base, "--fail-on", "latency"}, exitInvalid},
		{[]string{"--baseline-catalog", base, "--fail-on", "latency", "--latency-factor", "2.5"}, exitValid},
		{[]string{"--baseline-catalog", now, "--fail-on", "detection,new-invalid,latency"}, exitValid},
		{[]string{"--baseline-catalog", base, "--fail-on", "detection,speed"}, exitUsage},
		{[]string{"--fail-on", "speed"}, exitUsage},
		{[]string{"--baseline-catalog", base, "--baseline-revision", "abc"}, exitUsage},
		{[]string{"--baseline-catalog", filepath.Join(dir, "missing.db")}, exitUsage},
		{[]string{"--baseline-revision", "fff"}, exitUsage},
		{[]string{"--baseline-revision", "abc"}, exitValid},
		{nil, exitValid},
	} {
		args := append([]string{"compare", "--catalog", now, "-o", out}, c.args...)
		if code := run(args); code != c.code {
			t.Errorf("%s: exit %d, want %d", strings.Join(args, " "), code, c.code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("a missing baseline catalog was created")
	}
}

// TestCompareBaselineOutput: json has the changes beside the groups only
// with a baseline; table and md name each changed group with its kind
// and both sides' numbers.
func TestCompareBaselineOutput(t *testing.T) {
	dir := t.TempDir()
	base, now := filepath.Join(dir, "base.db"), filepath.Join(dir, "now.db")
	recordRuns(t, base, "none", 9, 1, 0, 0)
	recordRuns(t, now, "none", 1, 9, 0, 0)
	out := filepath.Join(dir, "out")
	read := func(args ...string) string {
		t.Helper()
		run(append([]string{"compare", "--catalog", now, "-o", out}, args...))
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(read("--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["changes"]; ok || len(doc) != 1 {
		t.Errorf("json without a baseline has keys beside groups: %v", doc)
	}
	var withBase struct {
		Groups  []catalog.Group  `json:"groups"`
		Changes []catalog.Change `json:"changes"`
	}
	if err := json.Unmarshal([]byte(read("--json", "--baseline-catalog", base)), &withBase); err != nil {
		t.Fatal(err)
	}
	if len(withBase.Groups) != 1 || len(withBase.Changes) != 1 {
		t.Fatalf("json with a baseline: %+v", withBase)
	}
	ch := withBase.Changes[0]
	if ch.Kind != "detection" || ch.Key["fence"] != "none" || ch.Baseline.Invalid != 9 || ch.Now.Invalid != 1 || ch.Message == "" {
		t.Errorf("change %+v", ch)
	}
	for _, format := range []string{"table", "md"} {
		s := read("--format", format, "--baseline-catalog", base)
		i := strings.Index(s, "hanges against "+base)
		if i < 0 {
			t.Fatalf("%s: no changes section:\n%s", format, s)
		}
		for _, want := range []string{"backend=redis nemesis=pause fence=none", "detection", "9/10 invalid [0.60, 0.98]", "1/10 invalid [0.02, 0.40]"} {
			if !strings.Contains(s[i:], want) {
				t.Errorf("%s: changes section lacks %q:\n%s", format, want, s)
			}
		}
	}
}
