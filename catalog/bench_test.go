package catalog

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

// BenchmarkImport imports 1,000 run directories (each a judged run of
// 2,000 events) into a fresh catalog. Its floor, measured in the same run,
// is reading every file of those directories, which any import must do.
func BenchmarkImport(b *testing.B) {
	const runs = 1000
	src := filepath.Join(b.TempDir(), "src")
	judgedRun(b, src, simulate.Spec{Events: 2000, Clients: 5})
	root := b.TempDir()
	for i := range runs {
		dir := filepath.Join(root, strconv.Itoa(i))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			b.Fatal(err)
		}
		rewriteTest(b, dir, func(test, _ map[string]any) { test["run_id"] = "run-" + strconv.Itoa(i) })
	}
	var ours, floor time.Duration
	for b.Loop() {
		start := time.Now()
		for i := range runs {
			for _, f := range []string{rundir.TestFile, rundir.ResultsFile, rundir.HistoryFile} {
				if _, err := os.ReadFile(filepath.Join(root, strconv.Itoa(i), f)); err != nil {
					b.Fatal(err)
				}
			}
		}
		floor += time.Since(start)
		c, err := Open(filepath.Join(b.TempDir(), File))
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if n, _, err := c.Import(root); err != nil || n != runs {
			b.Fatalf("import: %d runs, %v", n, err)
		}
		ours += time.Since(start)
		c.Close()
	}
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()*1000/n, "ms/import")
	b.ReportMetric(floor.Seconds()*1000/n, "ms/floor")
	b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-floor")
}

// BenchmarkCompare groups a catalog of 10⁴ runs (4 backends × 5 faults ×
// 2 fences, 250 runs each), which must take at most a second. Its floor is
// the bare query reading every latest judgment's metrics, without decoding
// or merging them.
func BenchmarkCompare(b *testing.B) {
	const runs = 10_000
	src := filepath.Join(b.TempDir(), "src")
	judgedRun(b, src, simulate.Spec{Events: 2000, Clients: 5})
	e, err := Judged(src)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(filepath.Join(b.TempDir(), File))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	backends, faults, fences := []string{"redis", "etcd", "zookeeper", "postgres"}, []string{"none", "pause", "kill", "partition", "clock"}, []string{"none", "all"}
	groups := len(backends) * len(faults) * len(fences)
	// One transaction for the lot: recording 10⁴ runs one commit each
	// would time the disk's syncs, not the catalog.
	if _, err := c.db.Exec(`PRAGMA synchronous = OFF`); err != nil {
		b.Fatal(err)
	}
	for i := range runs {
		r := e
		r.Test.RunID = "run-" + strconv.Itoa(i)
		r.Test.Config.Backend = backends[i%len(backends)]
		r.Test.Config.Nemesis = []string{faults[i/len(backends)%len(faults)]}
		r.Test.Config.Fence = store.Fence(fences[i/(len(backends)*len(faults))%len(fences)])
		if err := c.Record(r); err != nil {
			b.Fatal(err)
		}
	}
	var ours, floor time.Duration
	for b.Loop() {
		start := time.Now()
		rows, err := c.db.Query(`SELECT j.metrics FROM runs r JOIN judgments j USING (run_id, start, seed)`)
		if err != nil {
			b.Fatal(err)
		}
		var read int
		for rows.Next() {
			var m []byte
			if err := rows.Scan(&m); err != nil {
				b.Fatal(err)
			}
			read++
		}
		rows.Close()
		floor += time.Since(start)
		if read != runs {
			b.Fatalf("read %d judgments, want %d", read, runs)
		}
		start = time.Now()
		gs, err := c.Compare(Query{})
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if len(gs) != groups {
			b.Fatalf("%d groups, want %d", len(gs), groups)
		}
	}
	n := float64(b.N)
	per := ours.Seconds() / n
	b.ReportMetric(per*1000, "ms/compare")
	b.ReportMetric(floor.Seconds()*1000/n, "ms/floor")
	b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-floor")
	if per > 1 {
		b.Errorf("compare over %d runs took %.2f s, over its bound of 1 s", runs, per)
	}
}
