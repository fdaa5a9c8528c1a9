package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
)

// Judged reads the judged run in dir as the catalog keeps it: test.json,
// results.json, and the metrics of its history. The history is put in
// time order in memory; the run's files are not touched.
func Judged(dir string) (Entry, error) {
	test, raw, err := rundir.ReadTest(dir)
	if err != nil {
		return Entry{}, err
	}
	if err := nestedOptions(raw, &test.Config); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.TestFile), err)
	}
	res, err := rundir.ReadResults(dir)
	if err != nil {
		return Entry{}, err
	}
	h, err := history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return Entry{}, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.HistoryFile), err)
	}
	history.InTimeOrder(h)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Entry{}, fmt.Errorf("catalog: %w", err)
	}
	m := metrics.Measure(h, res.Checkers)
	m.Stopped = res.Stopped != nil
	return Entry{Test: test, Dir: abs, Results: res, Metrics: m}, nil
}

// Import records every judged run under each path (a run's directory, a
// results tree, a matrix's or a merged shard's output, a measured file or
// directory) and returns how many it recorded. A run not yet judged (no
// results.json) is skipped: it is recorded once it is checked.
func (c *Catalog) Import(paths ...string) (recorded, skipped int, err error) {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return recorded, skipped, fmt.Errorf("import: %w", err)
		}
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				if !isMeasured(path) {
					return nil
				}
				ms, err := ReadMeasured(path)
				if err != nil {
					return err
				}
				for _, m := range ms {
					if err := c.RecordMeasured(m); err != nil {
						return err
					}
				}
				recorded += len(ms)
				return nil
			}
			if _, err := os.Stat(filepath.Join(path, rundir.TestFile)); err != nil {
				return nil
			}
			if _, err := os.Stat(filepath.Join(path, rundir.ResultsFile)); err != nil {
				skipped++
				return filepath.SkipDir
			}
			e, err := Judged(path)
			if err != nil {
				return err
			}
			if err := c.Record(e); err != nil {
				return err
			}
			recorded++
			return filepath.SkipDir
		})
		if err != nil {
			return recorded, skipped, fmt.Errorf("import %s: %w", p, err)
		}
	}
	return recorded, skipped, nil
}

// nestedOptions fills the keys a catalog groups by from the layout of
// test.json in which each plug-in's options are nested under it:
// "backend_options" (the variant) and "fault_options" (the target, as
// "target" of the fault that took it, or flat as "pause_target"). A flat
// key, today's layout, wins; the two layouts key the same runs alike.
func nestedOptions(raw []byte, cfg *config.Config) error {
	var nested struct {
		Config struct {
			Backend map[string]json.RawMessage `json:"backend_options"`
			Fault   map[string]json.RawMessage `json:"fault_options"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &nested); err != nil {
		return fmt.Errorf("nested options: %w", err)
	}
	str := func(m map[string]json.RawMessage, key string) (string, error) {
		var v string
		if b, ok := m[key]; ok {
			if err := json.Unmarshal(b, &v); err != nil {
				return "", fmt.Errorf("option %s: %w", key, err)
			}
		}
		return v, nil
	}
	var err error
	if cfg.Variant == "" {
		if cfg.Variant, err = str(nested.Config.Backend, "variant"); err != nil {
			return err
		}
	}
	if cfg.PauseTarget == "" {
		if cfg.PauseTarget, err = str(nested.Config.Fault, "pause_target"); err != nil {
			return err
		}
	}
	// A fault's own options nest once more, under its name.
	for _, fault := range cfg.Nemesis {
		if cfg.PauseTarget != "" {
			break
		}
		var own map[string]json.RawMessage
		if b, ok := nested.Config.Fault[fault]; ok {
			if err := json.Unmarshal(b, &own); err != nil {
				return fmt.Errorf("options of %s: %w", fault, err)
			}
		}
		if cfg.PauseTarget, err = str(own, "target"); err != nil {
			return err
		}
	}
	return nil
}
