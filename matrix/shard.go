package matrix

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
)

// Planned is a cell at its place in the grid. The place fixes the cell's
// seeds, so that a shard runs each of its cells exactly as the whole grid
// would.
type Planned struct {
	Index int
	Cell  Cell
}

// Plan is every cell of the grid at its place.
func Plan(cells []Cell) []Planned {
	out := make([]Planned, len(cells))
	for i, c := range cells {
		out[i] = Planned{Index: i, Cell: c}
	}
	return out
}

// runOverhead is what a run costs besides its time limit and its service's
// bring-up: the store and the clients started and stopped, the checkers,
// the reports.
const runOverhead = 12 * time.Second

// Estimate is about how long one run of c takes: its time limit, the
// service's bring-up and teardown, and the rest of a run.
func Estimate(c Cell, base config.Config) time.Duration {
	d := base.TimeLimit.D() + runOverhead
	if b, ok := backends.Lookup(c.Backend); ok {
		cfg := c.config(base)
		d += b.Layout(&cfg).Startup
	}
	return d
}

// EstimateAll is about how long runs runs of each cell take one after the
// other.
func EstimateAll(cells []Planned, runs int, base config.Config) time.Duration {
	var d time.Duration
	for _, p := range cells {
		d += time.Duration(runs) * Estimate(p.Cell, base)
	}
	return d
}

// EstimateParallel is about how long the cells take run k at a time: the
// longest of k lanes dealt as k shards would be.
func EstimateParallel(cells []Planned, runs, k int, base config.Config) time.Duration {
	var longest time.Duration
	for i := 1; i <= k; i++ {
		longest = max(longest, EstimateAll(Shard{i, k}.Of(cells, base), runs, base))
	}
	return longest
}

// Shard is the slice I of N of a grid (1 ≤ I ≤ N), as --shard I/N names it.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads --shard's I/N.
func ParseShard(v string) (Shard, error) {
	i, n, ok := strings.Cut(v, "/")
	var s Shard
	var err1, err2 error
	s.Index, err1 = strconv.Atoi(i)
	s.Count, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 1 ≤ I ≤ N, e.g. 2/4", v)
	}
	return s, nil
}

// Of is the shard's share of the grid's cells, in grid order. Cells are
// dealt longest first, each to the shard with the least estimated time so
// far (the lowest-numbered on a tie), so that the shards end about
// together; the deal depends only on the grid, so every shard job computes
// the same one. A shard may be empty when N exceeds the cells.
func (s Shard) Of(cells []Planned, base config.Config) []Planned {
	order := slices.Clone(cells)
	slices.SortStableFunc(order, func(a, b Planned) int {
		return cmp.Compare(Estimate(b.Cell, base), Estimate(a.Cell, base))
	})
	load := make([]time.Duration, s.Count)
	var mine []Planned
	for _, p := range order {
		least := 0
		for i := range load {
			if load[i] < load[least] {
				least = i
			}
		}
		load[least] += Estimate(p.Cell, base)
		if least == s.Index-1 {
			mine = append(mine, p)
		}
	}
	slices.SortFunc(mine, func(a, b Planned) int { return cmp.Compare(a.Index, b.Index) })
	return mine
}

// digest is a short hash of v's JSON: two values with the same digest are
// the same.
func digest(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Only the plain structs of this package are hashed.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// GridDigest identifies a grid: its cells in order, those left out, the
// runs per cell and everything else each run is configured with, seed
// included. Shards of one grid share it.
func GridDigest(cells []Cell, skipped []Skipped, runs int, base config.Config) string {
	return digest(struct {
		Cells   []Cell
		Skipped []Skipped
		Runs    int
		Base    config.Config
	}{cells, skipped, runs, base})
}
