package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/rundir"
)

// cutLine is what a node's powerfs agent logs for each power cut, from
// its own count of what it took back.
var cutLine = regexp.MustCompile(`powerfs: power cut (as the server asked for an fsync|after \S+ without an fsync): killed \S+; dropped (\d+) writes never fsynced \((\d+) bytes\)`)

// aofShrunk is the agent's record of the AOF cut back to its last fsync.
var aofShrunk = regexp.MustCompile(`appendonly\.aof\.\d+\.incr\.aof (\d+) bytes → (\d+) bytes`)

// cuts reads the power cuts a node's agent logged: how many, and the
// bytes they took back.
func cuts(t *testing.T, dir, node string) (n int, bytes int64, shrunk bool) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, "logs", node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cutLine.FindAllStringSubmatch(string(log), -1) {
		n++
		b, _ := strconv.ParseInt(m[3], 10, 64)
		bytes += b
	}
	for _, m := range aofShrunk.FindAllStringSubmatch(string(log), -1) {
		before, _ := strconv.ParseInt(m[1], 10, 64)
		after, _ := strconv.ParseInt(m[2], 10, 64)
		shrunk = shrunk || after < before
	}
	if !strings.Contains(string(log), "powerfs: power on: ") {
		t.Errorf("%s's log has no mount of the lockbench disk", node)
	}
	return n, bytes, shrunk
}

// onlyProgressUnknown says whether a run's one unknown verdict is the
// progress rule's, every other checker valid or skipped.
func onlyProgressUnknown(rep rundir.Results) bool {
	for _, r := range rep.Checkers {
		want := r.Valid == checkers.Valid || r.Valid == checkers.Skipped
		if r.Checker == "progress" {
			want = r.Valid == checkers.Unknown
		}
		if !want {
			return false
		}
	}
	return true
}

// assertNoMount fails if any process on this machine, in any mount
// namespace, still sees a mount of the run's disks.
func assertNoMount(t *testing.T, runID string) {
	t.Helper()
	infos, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, f := range infos {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), "powerfs-"+runID) {
			t.Errorf("%s still lists a mount of run %s's disk", f, runID)
		}
	}
}

// Power loss against a process crash on Redis, and a datacenter outage on
// etcd, ZooKeeper and Redlock. Redis's appendfsync everysec acknowledges a write
// before it is fsynced: a power cut right after a grant forgets the lock
// key and the token increment, and a second client takes the lock while
// the first one's lease is certainly valid; with always it fsyncs before
// it answers, and under kill the page cache keeps everything. The TTL is
// short and the work long so that the holder of the forgotten grant is
// still in its section when the restarted server grants the lock again.
func TestPowerLoss(t *testing.T) {
	short := []string{"--ttl", "500ms", "--work-max", "1500ms"}
	timing := []string{"--time-limit", "12s", "--nemesis-interval", "4s"}
	// The controls must be valid, not unknown, so their first fault comes
	// late enough for the progress rule's sections to complete first even
	// on a loaded machine: with seed 1 a 6 s interval puts it 9.0 s in
	// (4 s put it 6.0 s in, where a slow machine completed fewer than
	// five). The fault's shape and the work are those of redis-everysec,
	// and 5 s remain after the cut for a forgotten grant to show.
	control := []string{"--time-limit", "14s", "--nemesis-interval", "6s", "--seed", "1"}
	// Five nodes take longer to cut (each at its own next fsync) and to
	// restart than a 500 ms lease lasts; on an engine whose containers
	// take most of a second to start again, longer than a 1 s lease too,
	// and then no seed showed the forgotten grant: the lease is 2 s.
	// Their first fault comes late for the same reason as the controls'.
	redlock := []string{"--backend", "redlock", "--redis-persistence", "everysec", "--nemesis", "power-loss",
		"--ttl", "2s", "--work-max", "4s", "--time-limit", "18s", "--nemesis-interval", "6s"}
	redlockNodes := []string{"r1", "r2", "r3", "r4", "r5"}
	for _, c := range []struct {
		name string
		args []string
		// valid is the expected verdict; cut, whether a power cut must be
		// in the nodes' logs (the kill run has none), and lost, whether
		// it must have taken back bytes the AOF held.
		valid, cut, lost bool
		nodes            []string
		// control marks the Redis controls, timed by control.
		control bool
		// seeds, when set, are the seeds tried in turn: for a case that
		// expects two holders, until a run shows them (its literature
		// says only that the loss can grant a second holder, whose
		// timing is chance); for one that expects valid, until a run's
		// progress is meaningful (its sections are as long as the
		// undelayed case's, so how many complete before the cut is
		// chance too). Either way the last seed's run is judged.
		seeds []string
	}{
		// Whether a cut forgets a grant whose lease is still valid is
		// chance: CI once saw seed 2's three cuts each fall after the
		// forgotten holder's 500 ms lease had run out (duplicate tokens,
		// no two holders), so the next seeds are tried.
		{"redis-everysec", []string{"--backend", "redis", "--redis-persistence", "everysec", "--nemesis", "power-loss", "--fence", "all"},
			false, true, true, []string{"redis"}, false, []string{"2", "3", "4", "5"}},
		{"redis-always", []string{"--backend", "redis", "--redis-persistence", "always", "--nemesis", "power-loss", "--fence", "all"},
			true, true, false, []string{"redis"}, true, nil},
		{"redis-everysec-kill", []string{"--backend", "redis", "--redis-persistence", "everysec", "--nemesis", "kill", "--fence", "all"},
			true, false, false, []string{"redis"}, true, nil},
		// A 2 s TTL: three members restarting from a cut, fsyncing and
		// electing took 4.7 s on a loaded machine, past the progress
		// rule's 3 TTLs without a grant once the fault has healed.
		{"etcd-all", []string{"--backend", "etcd", "--ttl", "2s", "--nemesis", "power-loss", "--power-target", "all", "--fence", "all", "--seed", "1"},
			true, true, false, []string{"e1", "e2", "e3"}, false, nil},
		// ZooKeeper's members fsync their log before they acknowledge
		// (forceSync=yes in power-loss runs), and keep sessions in it:
		// the holder's znode and the czxid counter survive the outage.
		// One cut, at the first grant after 12 s (seed 1 draws the
		// longest gap), and no second: a second cut soon after a restart
		// would find the new epoch's log file not yet named durably (the
		// README says why). A 2 s TTL, as etcd's: three JVMs restarting
		// from a cut and electing took 3.1 s to grant again on a loaded
		// machine, past the progress rule's 3 TTLs of a 1 s TTL.
		{"zookeeper-all", []string{"--backend", "zookeeper", "--ttl", "2s", "--nemesis", "power-loss", "--power-target", "all", "--fence", "all",
			"--seed", "1", "--time-limit", "18s", "--nemesis-interval", "8s"},
			true, true, false, []string{"z1", "z2", "z3"}, false, nil},
		// Redlock's five nodes all lose power: with no restart delay they
		// come back without the grant; with a delay longer than the TTL
		// (antirez's remedy) every lease they held has run out first.
		{"redlock-everysec", redlock,
			false, true, true, redlockNodes, false, []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
		{"redlock-everysec-delayed", append(slices.Clone(redlock), "--restart-delay", "3s"),
			true, true, false, redlockNodes, false, []string{"1", "2", "3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"run"}, short...), c.args...)
			if c.control {
				args = append(args, control...)
			} else if !slices.Contains(c.args, "--time-limit") {
				args = append(args, timing...)
			}
			var r result
			var rep rundir.Results
			var ex checkers.Result
			for i := 0; ; i++ {
				try := args
				if c.seeds != nil {
					try = append(slices.Clone(args), "--seed", c.seeds[i])
				}
				r = lockbench(t, nil, try...)
				assertNoMount(t, r.runID)
				assertNothingLeft(t, r.runID)
				rep = readReport(t, r.dir)
				ex = checker(t, rep, "exclusion")
				progress := checker(t, rep, "progress")
				t.Logf("progress: %s", progress.Summary)
				if c.seeds == nil || i == len(c.seeds)-1 {
					break
				}
				if c.valid {
					// Only a run too short to judge is tried again: an
					// invalid verdict, or an unknown one for another
					// reason, is judged as it is.
					if r.exit != 2 || !onlyProgressUnknown(rep) {
						break
					}
					t.Logf("seed %s: progress %s (%s): too few sections before the cut to judge; next seed", c.seeds[i], progress.Valid, progress.Reason)
					continue
				}
				if r.exit == 1 && ex.Valid == checkers.Invalid {
					break
				}
				t.Logf("seed %s: exit %d, exclusion %s (%s): the cut fell where no lease was valid; next seed", c.seeds[i], r.exit, ex.Valid, ex.Summary)
			}
			// A valid case whose every seed completed too few sections
			// before its cut for progress to judge is judged on the rest:
			// its claim is that no two leases overlapped, and progress
			// unknown says only that liveness went untested (CI saw 4, 2
			// and 2 sections before the cut with the 4 s sections of the
			// delayed Redlock case).
			onlyLiveness := c.valid && r.exit == 2 && onlyProgressUnknown(rep)
			if onlyLiveness {
				t.Logf("every seed too short before its cut to judge progress; judged on the other checkers")
			}
			switch {
			case c.valid && (r.exit != 0 && !onlyLiveness || ex.Valid != checkers.Valid):
				t.Fatalf("exit %d, exclusion %s: want valid", r.exit, ex.Valid)
			case !c.valid && (r.exit != 1 || ex.Valid != checkers.Invalid || len(ex.Anomalies) == 0 || len(ex.Anomalies[0].Clients) != 2):
				t.Fatalf("exit %d, exclusion %s %+v: want two holders", r.exit, ex.Valid, ex.Anomalies)
			}
			if !c.valid && slices.Contains(c.args, "--fence") {
				// The token counter's increments are lost with the grant.
				if fence := checker(t, rep, "fence"); fence.Valid != checkers.Invalid || fence.Counts["duplicate_token"] == 0 {
					t.Errorf("fence %s %v: want the duplicate tokens of the forgotten increments", fence.Valid, fence.Counts)
				}
			}
			if !c.cut {
				// The kill's first fault comes late in the run: its
				// server's own log must show it started again after it.
				log, err := os.ReadFile(filepath.Join(r.dir, "logs", c.nodes[0]+".log"))
				if err != nil {
					t.Fatal(err)
				}
				n := strings.Count(string(log), "Ready to accept connections")
				if n < 2 {
					t.Fatalf("%s's log says it started %d times: want a restart after the kill", c.nodes[0], n)
				}
				t.Logf("%s started %d times", c.nodes[0], n)
				return
			}
			for _, n := range c.nodes {
				cut, bytes, shrunk := cuts(t, r.dir, n)
				if cut == 0 {
					t.Fatalf("%s's agent logged no power cut", n)
				}
				if c.lost && (bytes == 0 || !shrunk) {
					t.Errorf("%s: %d cuts took back %d bytes, AOF shrunk %v: want the unsynced appends gone", n, cut, bytes, shrunk)
				}
			}
		})
	}
}
