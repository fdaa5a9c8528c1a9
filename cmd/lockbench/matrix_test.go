package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// matrix --dry-run lists the cells of the sweep axes, named by the values
// off the flags' defaults and carrying every axis in JSON, beside the
// combinations a backend refuses and the aimed twins.
func TestMatrixDryRunSweeps(t *testing.T) {
	code, stdout, stderr := capture(t, "matrix", "--dry-run", "--json", "--backends", "redis,etcd", "--nemeses", "pause",
		"--fences", "none,writes", "--ttls", "500ms,2s", "--check-leases", "on,off", "--works", "uniform:0-200ms", "--works", "tail:0-100ms,1/4,1500ms")
	if code != exitValid {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var plan dryRunJSON
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("stdout is not the plan: %v\n%s", err, stdout)
	}
	cells := map[string]plannedCell{}
	for _, c := range plan.Cells {
		cells[c.Name] = c
	}
	for _, want := range []string{"redis/counter/pause/fence-none", "redis/counter/pause/fence-none/ttl-500ms/check-lease-on",
		"etcd/counter/pause/fence-writes/work-tail:0-100ms,1/4,1500ms", "redis/counter/pause/fence-writes/ttl-500ms/aimed-holder-section"} {
		if _, ok := cells[want]; !ok {
			t.Errorf("no cell %s in the plan", want)
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("the plan for people lacks %s", want)
		}
	}
	if c := cells["redis/counter/pause/fence-none/ttl-500ms/check-lease-on"]; c.TTL.D().String() != "500ms" || c.CheckLease != "on" || c.Concurrency != 5 {
		t.Errorf("the cell carries %+v", c.Cell)
	}
	refused := false
	for _, s := range plan.Skipped {
		if s.Cell.Backend == "etcd" && strings.Contains(s.Reason, "whole seconds") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("etcd at 500ms is not left out: %+v", plan.Skipped)
	}
}

// A bad value of a sweep axis is refused before the grid, in one line.
func TestMatrixRefusesBadSweeps(t *testing.T) {
	for _, args := range [][]string{
		{"--ttls", "soon"}, {"--ttls", "50ms"}, {"--ttls", "1s,1000ms"}, {"--ttls", "30s"}, {"--concurrencies", "0"},
		{"--rtts", "-1s"}, {"--variants", "nope"}, {"--on-lock-errors", "ajar"}, {"--check-leases", "yes"},
		{"--works", "fixed"}, {"--works", "fixed:1s", "--works", "fixed:1000ms"},
	} {
		code, stdout, stderr := capture(t, append([]string{"matrix", "--dry-run"}, args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
