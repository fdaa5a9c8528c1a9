package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

var shardBase = config.Config{TTL: config.Duration(2 * time.Second), TimeLimit: config.Duration(10 * time.Second), Concurrency: 2,
	NemesisInterval: config.Duration(time.Second), FaultDuration: config.Duration(4 * time.Second),
	OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Second), Nodes: 5, Seed: 40}

func shardGrid(t *testing.T) []Cell {
	t.Helper()
	cells, _ := Grid(Axes{Backends: []string{"redis", "redlock", "etcd", "zookeeper", "cas", "nolock"}, Workloads: []string{"counter", "set"},
		Nemeses: []string{"none", "pause"}, Fences: []string{"none", "all"}, Stores: []string{"lockbench"}}, shardBase, nil)
	if len(cells) < 20 {
		t.Fatalf("grid of %d cells", len(cells))
	}
	return cells
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/4"); err != nil || s != (Shard{2, 4}) {
		t.Errorf("2/4: %v %v", s, err)
	}
	for _, bad := range []string{"", "2", "0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Every cell lands in exactly one shard, in grid order, the deal is the
// same each time, and no shard's estimate exceeds another's by more than
// one cell's.
func TestShardsCoverTheGridBalanced(t *testing.T) {
	plan := Plan(shardGrid(t))
	var longest time.Duration
	for _, p := range plan {
		longest = max(longest, Estimate(p.Cell, shardBase))
	}
	for n := 1; n <= len(plan)+1; n++ {
		seen := map[int]int{}
		var loads []time.Duration
		for i := 1; i <= n; i++ {
			mine := Shard{i, n}.Of(plan, shardBase)
			if again := (Shard{i, n}).Of(plan, shardBase); !reflect.DeepEqual(mine, again) {
				t.Fatalf("shard %d/%d dealt differently twice", i, n)
			}
			if !slices.IsSortedFunc(mine, func(a, b Planned) int { return a.Index - b.Index }) {
				t.Errorf("shard %d/%d not in grid order", i, n)
			}
			for _, p := range mine {
				seen[p.Index]++
			}
			loads = append(loads, EstimateAll(mine, 1, shardBase))
		}
		for _, p := range plan {
			if seen[p.Index] != 1 {
				t.Fatalf("%d shards: cell %d in %d shards", n, p.Index, seen[p.Index])
			}
		}
		if n <= len(plan) && slices.Max(loads)-slices.Min(loads) > longest {
			t.Errorf("%d shards: estimates %v differ by more than one cell (%s)", n, loads, longest)
		}
	}
}

// The estimate tells services apart: a ZooKeeper cell costs more than a
// CAS one, which starts no service.
func TestEstimateCountsBringUp(t *testing.T) {
	zk, cas := Estimate(Cell{Backend: "zookeeper", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, shardBase), Estimate(Cell{Backend: "cas", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, shardBase)
	if cas != shardBase.TimeLimit.D()+runOverhead || zk <= cas {
		t.Errorf("zookeeper %s, cas %s", zk, cas)
	}
}

// seedRun records each run's seed in its directory's name.
func seedRun(_ context.Context, cfg config.Config, _ runner.Options) (*rundir.Results, error) {
	c := Cell{Backend: cfg.Backend, Workload: cfg.Workload, Nemesis: cfg.Nemesis[0], Fence: string(cfg.Fence), Store: cfg.Store}
	v := checkers.Valid
	if c.Backend == "nolock" || (c.Nemesis == "pause" && c.Fence == "none") {
		v = checkers.Invalid
	}
	return &rundir.Results{Verdict: v, Dir: filepath.Join("res", c.Backend, c.Nemesis, c.Fence, time.Duration(cfg.Seed).String())}, nil
}

// shardParts runs the grid in n shards as n jobs would, each writing its
// matrix.json, and reads them back.
func shardParts(t *testing.T, cells []Cell, n int, exp *Expectations) []Part {
	t.Helper()
	root := t.TempDir()
	grid := GridDigest(cells, nil, 2, shardBase)
	var parts []Part
	for i := 1; i <= n; i++ {
		s := Shard{i, n}
		mine := s.Of(Plan(cells), shardBase)
		res := Run(context.Background(), mine, 2, 1, shardBase, runner.Options{}, exp, seedRun, new(strings.Builder))
		dir := filepath.Join("results", "matrix", "shard")
		sr := &ShardRun{Shard: s, Dir: dir, Cells: []int{}}
		for _, p := range mine {
			sr.Cells = append(sr.Cells, p.Index)
		}
		sum := Summary{Runs: 2, Cells: res, Exit: Exit(res), Grid: grid, Expectations: exp.Digest(), Lockbench: "v1", Shard: sr}
		// As on a CI runner: the artifact holds the results tree.
		at := filepath.Join(root, "artifact", s.String(), "matrix", "shard")
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(at, sum); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := ReadParts([]string{filepath.Join(root, "artifact"), filepath.Join(root, "artifact", "1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != n {
		t.Fatalf("%d parts read, want %d (each file once)", len(parts), n)
	}
	return parts
}

// Shards merged are the whole grid: the same cells in the same order,
// with the same seeds, verdicts, expectations and outcomes.
func TestMergeIsTheWholeGrid(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells := shardGrid(t)
	whole := Run(context.Background(), Plan(cells), 2, 1, shardBase, runner.Options{}, exp, seedRun, new(strings.Builder))
	for _, n := range []int{2, 3} {
		merged, err := Merge(shardParts(t, cells, n, exp))
		if err != nil {
			t.Fatal(err)
		}
		if len(merged.Cells) != len(whole) || len(merged.Shards) != n || merged.Exit != Exit(whole) {
			t.Fatalf("%d shards: %d cells, %d shards, exit %d", n, len(merged.Cells), len(merged.Shards), merged.Exit)
		}
		for i, c := range merged.Cells {
			w := whole[i]
			if c.Index != w.Index || c.Cell != w.Cell || c.Expect != w.Expect || c.Outcome != w.Outcome || len(c.Runs) != len(w.Runs) {
				t.Fatalf("%d shards, cell %d: %+v, whole grid %+v", n, i, c, w)
			}
			for j, r := range c.Runs {
				if r.Seed != w.Runs[j].Seed || r.Verdict != w.Runs[j].Verdict || filepath.Base(r.Dir) != filepath.Base(w.Runs[j].Dir) {
					t.Errorf("%d shards, %s run %d: %+v, whole grid %+v", n, c.Cell.Name(), j, r, w.Runs[j])
				}
				// The run directory is named from where the shard was found.
				if !strings.Contains(r.Dir, filepath.Join("artifact")) {
					t.Errorf("run directory %s not renamed", r.Dir)
				}
			}
		}
	}
}

func TestMergeRefusesMismatchedShards(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells := shardGrid(t)
	fresh := func() []Part { return shardParts(t, cells, 2, exp) }
	for name, c := range map[string]struct {
		spoil func([]Part) []Part
		want  string
	}{
		"grid":          {func(p []Part) []Part { p[1].Summary.Grid = "other"; return p }, "different grids"},
		"expectations":  {func(p []Part) []Part { p[1].Summary.Expectations = "other"; return p }, "different expectations"},
		"version":       {func(p []Part) []Part { p[0].Summary.Lockbench = "v2"; return p }, "run by lockbench"},
		"count":         {func(p []Part) []Part { p[1].Summary.Shard.Count = 3; return p }, "split the grid differently"},
		"twice":         {func(p []Part) []Part { return []Part{p[0], p[0]} }, "same shard"},
		"missing":       {func(p []Part) []Part { return p[1:] }, "missing shard(s) [1]"},
		"incomplete":    {func(p []Part) []Part { p[1].Summary.Cells = p[1].Summary.Cells[1:]; return p }, "cells (interrupted?)"},
		"interrupted":   {func(p []Part) []Part { p[0].Summary.Interrupted = true; return p }, "was interrupted"},
		"not a shard":   {func(p []Part) []Part { p[0].Summary.Shard = nil; return p }, "is not a shard"},
		"no shards":     {func([]Part) []Part { return nil }, "no shards"},
		"foreign cells": {func(p []Part) []Part { p[1].Summary.Cells[0].Index = 999; p[1].Summary.Shard.Cells[0] = 999; return p }, "do not cover the grid"},
	} {
		_, err := Merge(c.spoil(fresh()))
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// A folder holding shards and their merge gives the shards; a folder with
// no matrix, or a matrix.json that is not one, is refused.
func TestReadPartsSkipsMergesRefusesGarbage(t *testing.T) {
	dir := t.TempDir()
	write := func(sub string, s any) {
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(s)
		if err := os.WriteFile(filepath.Join(d, rundir.MatrixJSON), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/matrix/1", Summary{Shard: &ShardRun{Shard: Shard{1, 1}}})
	write("a/matrix/2", Summary{Shards: []ShardRun{{Shard: Shard{1, 1}}}})
	parts, err := ReadParts([]string{filepath.Join(dir, "a")})
	if err != nil || len(parts) != 1 || parts[0].Summary.Shard == nil {
		t.Errorf("parts %+v, %v", parts, err)
	}
	if _, err := ReadParts([]string{filepath.Join(dir, "none")}); !errors.Is(err, ErrMismatch) {
		t.Errorf("a missing folder: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadParts([]string{filepath.Join(dir, "empty")}); !errors.Is(err, ErrMismatch) {
		t.Errorf("a folder without matrix.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty", rundir.MatrixJSON), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadParts([]string{filepath.Join(dir, "empty")}); !errors.Is(err, ErrMismatch) {
		t.Errorf("a broken matrix.json: %v", err)
	}
}

// K cells at a time: as many runs at once as asked and no more, the
// results in grid order with the seeds and verdicts of one at a time.
func TestRunParallelKeepsOrderAndSeeds(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells := shardGrid(t)
	var mu sync.Mutex
	running, most := 0, 0
	slow := func(ctx context.Context, cfg config.Config, o runner.Options) (*rundir.Results, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		fmt.Fprintf(o.Out, "one line\nand another\n")
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return seedRun(ctx, cfg, o)
	}
	var log strings.Builder
	one := Run(context.Background(), Plan(cells), 2, 1, shardBase, runner.Options{Out: io.Discard}, exp, seedRun, io.Discard)
	four := Run(context.Background(), Plan(cells), 2, 4, shardBase, runner.Options{Out: io.Discard}, exp, slow, &log)
	if most != 4 {
		t.Errorf("at most %d runs at once, want 4", most)
	}
	if len(four) != len(one) {
		t.Fatalf("%d cells, want %d", len(four), len(one))
	}
	for i := range one {
		if four[i].Index != one[i].Index || four[i].Outcome != one[i].Outcome || four[i].Runs[1].Seed != one[i].Runs[1].Seed {
			t.Errorf("cell %d: %+v, one at a time %+v", i, four[i], one[i])
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if !strings.Contains(l, "/counter/") && !strings.Contains(l, "/set/") {
			t.Errorf("a line without its cell: %q", l)
		}
	}
	if plain := EstimateParallel(Plan(cells), 1, 1, shardBase); EstimateParallel(Plan(cells), 1, 4, shardBase) > plain/3 {
		t.Errorf("four lanes estimated at more than a third of one")
	}
}

// A cell's seeds are its own: the same in a grid of other cells, alone,
// or behind cells added before it, and different from its neighbours'.
func TestSeedsBelongToTheCell(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells := shardGrid(t)
	last := cells[len(cells)-1]
	whole := Run(context.Background(), Plan(cells), 2, 1, shardBase, runner.Options{Out: io.Discard}, exp, seedRun, io.Discard)
	alone := Run(context.Background(), Plan([]Cell{last}), 2, 1, shardBase, runner.Options{Out: io.Discard}, exp, seedRun, io.Discard)
	w := whole[len(whole)-1]
	for i := range 2 {
		if w.Runs[i].Seed != alone[0].Runs[i].Seed || w.Runs[i].Seed != SeedOf(shardBase.Seed, last)+int64(i) {
			t.Errorf("run %d: seed %d in the grid, %d alone, want %d", i, w.Runs[i].Seed, alone[0].Runs[i].Seed, SeedOf(shardBase.Seed, last)+int64(i))
		}
	}
	seen := map[int64]string{}
	for _, c := range cells {
		s := SeedOf(shardBase.Seed, c)
		if other, ok := seen[s]; ok {
			t.Errorf("%s and %s share seed %d", c.Name(), other, s)
		}
		seen[s] = c.Name()
	}
	if SeedOf(shardBase.Seed, last) == SeedOf(shardBase.Seed+1, last) {
		t.Error("the base seed does not change the cell's seeds")
	}
}
