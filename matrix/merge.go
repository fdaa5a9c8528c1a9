package matrix

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockbench/lockbench/rundir"
)

// ErrMismatch marks shards that do not make one matrix: bad input.
var ErrMismatch = errors.New("shards do not merge")

// Part is one shard's matrix.json and the directory it was found in.
type Part struct {
	Dir     string
	Summary Summary
}

// ReadParts reads the matrix.json of every matrix found in dirs: each is a
// matrix directory or any folder above some (a downloaded artifact, a
// results tree). A file reached twice (the same folder named twice, or
// inside another named folder) is read once; merged matrices are passed
// over.
func ReadParts(dirs []string) ([]Part, error) {
	var parts []Part
	seen := map[string]bool{}
	for _, d := range dirs {
		found := 0
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() || e.Name() != rundir.MatrixJSON {
				return nil
			}
			found++
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return err
			}
			if real, err = filepath.Abs(real); err != nil {
				return err
			}
			if seen[real] {
				return nil
			}
			seen[real] = true
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var s Summary
			if err := json.Unmarshal(data, &s); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrMismatch, path, err)
			}
			// A merge's own output is no input to another: a results tree
			// that holds both the shards and their merge gives the shards.
			if len(s.Shards) > 0 {
				return nil
			}
			parts = append(parts, Part{Dir: filepath.Dir(path), Summary: s})
			return nil
		})
		if err != nil {
			if errors.Is(err, ErrMismatch) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", ErrMismatch, err)
		}
		if found == 0 {
			return nil, fmt.Errorf("%w: no %s under %s", ErrMismatch, rundir.MatrixJSON, d)
		}
	}
	return parts, nil
}

// Merge makes one matrix of the shards of one grid: every shard of
// --shard I/N once, each complete, all of the same grid (seed included),
// expectations and lockbench version. Run directories are renamed from
// where each shard wrote them to where its matrix.json was found, so that
// the merged matrix.md links to them.
func Merge(parts []Part) (Summary, error) {
	var m Summary
	if len(parts) == 0 {
		return m, fmt.Errorf("%w: no shards", ErrMismatch)
	}
	for _, p := range parts {
		if p.Summary.Shard == nil {
			return m, fmt.Errorf("%w: %s is not a shard (a matrix run without --shard, or a merged one)", ErrMismatch, p.Dir)
		}
	}
	slices.SortStableFunc(parts, func(a, b Part) int { return cmp.Compare(a.Summary.Shard.Index, b.Summary.Shard.Index) })
	ref := parts[0]
	name := func(p Part) string { return fmt.Sprintf("shard %s (%s)", p.Summary.Shard.Shard, p.Dir) }
	for i, p := range parts {
		s := p.Summary
		switch {
		case s.Shard.Count != ref.Summary.Shard.Count:
			return m, fmt.Errorf("%w: %s and %s split the grid differently", ErrMismatch, name(ref), name(p))
		case s.Grid != ref.Summary.Grid:
			return m, fmt.Errorf("%w: %s and %s are of different grids (axes, runs per cell, seed or another flag differ)", ErrMismatch, name(ref), name(p))
		case s.Expectations != ref.Summary.Expectations:
			return m, fmt.Errorf("%w: %s and %s were judged by different expectations", ErrMismatch, name(ref), name(p))
		case s.Lockbench != ref.Summary.Lockbench:
			return m, fmt.Errorf("%w: %s was run by lockbench %s, %s by %s", ErrMismatch, name(ref), ref.Summary.Lockbench, name(p), s.Lockbench)
		case i > 0 && s.Shard.Index == parts[i-1].Summary.Shard.Index:
			return m, fmt.Errorf("%w: %s and %s are the same shard", ErrMismatch, name(parts[i-1]), name(p))
		}
		if s.Interrupted {
			return m, fmt.Errorf("%w: %s was interrupted", ErrMismatch, name(p))
		}
		var ran []int
		for _, c := range s.Cells {
			ran = append(ran, c.Index)
		}
		if !slices.Equal(ran, s.Shard.Cells) {
			return m, fmt.Errorf("%w: %s ran %d of its %d cells (interrupted?)", ErrMismatch, name(p), len(ran), len(s.Shard.Cells))
		}
	}
	count := ref.Summary.Shard.Count
	if len(parts) != count {
		var missing []int
		for i := 1; i <= count; i++ {
			if !slices.ContainsFunc(parts, func(p Part) bool { return p.Summary.Shard.Index == i }) {
				missing = append(missing, i)
			}
		}
		return m, fmt.Errorf("%w: %d of %d shards given; missing shard(s) %v of %d", ErrMismatch, len(parts), count, missing, count)
	}
	m = Summary{Started: ref.Summary.Started, Runs: ref.Summary.Runs, Skipped: ref.Summary.Skipped,
		Grid: ref.Summary.Grid, Expectations: ref.Summary.Expectations, Lockbench: ref.Summary.Lockbench}
	for _, p := range parts {
		s := p.Summary
		if s.Started.Before(m.Started) {
			m.Started = s.Started
		}
		// The shards ran side by side: the matrix took as long as the
		// longest.
		m.Seconds = max(m.Seconds, s.Seconds)
		m.Shards = append(m.Shards, *s.Shard)
		for _, c := range s.Cells {
			for i, r := range c.Runs {
				if r.Dir == "" {
					continue
				}
				if rel, err := filepath.Rel(s.Shard.Dir, r.Dir); err == nil {
					c.Runs[i].Dir = filepath.Join(p.Dir, rel)
				}
			}
			m.Cells = append(m.Cells, c)
		}
	}
	slices.SortFunc(m.Cells, func(a, b CellResult) int { return cmp.Compare(a.Index, b.Index) })
	for i, c := range m.Cells {
		if c.Index != i {
			return Summary{}, fmt.Errorf("%w: the shards do not cover the grid: no cell at place %d", ErrMismatch, i)
		}
	}
	m.Exit = Exit(m.Cells)
	return m, nil
}
