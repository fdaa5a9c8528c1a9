package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// postgresLog is what the server printed during a run: the proof, from
// inside the cluster, of what a fault did to its sessions.
func postgresLog(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rundir.LogsDir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// PostgreSQL advisory locks under the faults that apply to them, one short
// run each (the server starts in about a second). A session lock has no
// TTL: a frozen holder keeps it and everyone waits (valid, the lock fails
// closed); an idle timeout ends the frozen holder's session, and its
// unfenced write then lands after the next grant (invalid), which --fence
// all rejects (there with the transaction lock, whose transaction the idle
// timeout ends); a holder cut off by a partition loses its session to the
// server's keepalives about one TTL later, and a section longer than that
// writes stale; a restart ends every session, and the committed tokens
// go on growing; --store postgres, whose writes commit in the transaction
// holding the lock, stays valid under all of these at once. Each run's
// server log shows, from inside the cluster, what ended the sessions.
func TestPostgresRuns(t *testing.T) {
	common := []string{"run", "--backend", "postgres", "--fault-duration", "4s"}
	// The seed's first pause comes about 6 s into the workload (later on a
	// loaded machine, whose run clock starts seconds before the clients
	// do), when several sections have completed; sections of up to 1.5 s
	// are seldom over in the tenth of a second between the nemesis's
	// choice of the holder and its SIGSTOP.
	pauses := []string{"--nemesis", "pause", "--time-limit", "10s", "--nemesis-interval", "4s", "--work-max", "1500ms", "--seed", "11"}
	cases := []struct {
		name string
		args []string
		want int
		// server is what the server must have logged, absent what it
		// must not have.
		server, absent string
		check          func(t *testing.T, dir string, rep rundir.Results)
	}{
		{
			name: "pause-fails-closed", args: append([]string{"--fence", "none"}, pauses...), want: 0,
			absent: "terminating connection",
			check: func(t *testing.T, dir string, rep rundir.Results) {
				ex := checker(t, rep, "exclusion")
				if ex.Counts["faults_held_through"] == 0 || ex.Counts["stale_beliefs"] != 0 {
					t.Errorf("exclusion counts %v: want a pause the holder kept the lock through, and no stale belief", ex.Counts)
				}
				if rep.Evidence != "" {
					t.Errorf("evidence %q: a pause that kept the lock from everyone reached a holder", rep.Evidence)
				}
				for _, f := range ex.Faults {
					if f.HeldThrough {
						noGrantDuring(t, dir, f)
					}
				}
				page, err := os.ReadFile(filepath.Join(dir, "report.html"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(page), "kept the lock from everyone for the whole fault") && !strings.Contains(string(page), "was kept from everyone from") {
					t.Error("report.html does not say the lock was unavailable for the whole pause")
				}
			},
		},
		{
			name: "pause-idle-timeout-unfenced", args: append([]string{"--pg-idle-timeout", "1s", "--fence", "none"}, pauses...), want: 1,
			server: "terminating connection due to idle-session timeout",
			check: func(t *testing.T, dir string, rep rundir.Results) {
				if f := checker(t, rep, "fence"); f.Valid != checkers.Invalid {
					t.Errorf("fence %s: want the stale write accepted", f.Valid)
				}
				staleWindows(t, dir)
			},
		},
		{
			// The transaction lock: its idle timeout ends the frozen
			// holder's transaction, and the lock with it.
			name: "pause-idle-timeout-fenced-xact", args: append([]string{"--pg-lock", "xact", "--pg-idle-timeout", "1s", "--fence", "all"}, pauses...), want: 0,
			server: "terminating connection due to idle-in-transaction timeout",
			check: func(t *testing.T, dir string, rep rundir.Results) {
				staleWindows(t, dir)
			},
		},
		{
			name: "partition-unfenced", // Sections of up to 6 s outlast the server's detection of the
			// cut-off holder (a TTL) only when the cut lands early in
			// one, so the run is repeated until one is invalid (seeds 1
			// to 4: at most four tries, the first usually enough); too
			// few sections complete before the fault for progress to
			// judge, which an invalid verdict does not need.
			args: []string{"--nemesis", "partition", "--fence", "none", "--work-max", "6s", "--time-limit", "12s", "--nemesis-interval", "3s", "--seed", "1",
				"--test-count", "4", "--until-invalid"}, want: 1,
			server: "could not receive data from client: Connection timed out",
		},
		{
			// The seed's first kill comes after about 6 s, when enough
			// sections have completed; the server's crash recovery and
			// the clients' reconnection need seconds more before the
			// next grant, which the check below requires.
			name: "kill-fenced", args: []string{"--nemesis", "kill", "--fence", "all", "--work-max", "2s", "--time-limit", "14s", "--nemesis-interval", "4s", "--seed", "11"}, want: 0,
			server: "database system was not properly shut down",
			check: func(t *testing.T, dir string, rep rundir.Results) {
				tokensGrowAcrossKills(t, dir)
			},
		},
		{
			name: "store-postgres", args: []string{"--store", "postgres", "--nemesis", "pause,partition,kill", "--pg-idle-timeout", "1s", "--work-max", "600ms",
				"--time-limit", "10s", "--nemesis-interval", "3s", "--seed", "5"}, want: 0,
			server: "database system was not properly shut down",
			check: func(t *testing.T, dir string, rep rundir.Results) {
				if lu := checker(t, rep, "lost-updates"); lu.Counts["acknowledged"] == 0 {
					t.Errorf("lost-updates %v: the audit table gave no acknowledged write", lu.Counts)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lockbench(t, nil, append(append([]string{}, common...), c.args...)...)
			// A series is judged by its last run, the invalid one.
			for _, m := range runLine.FindAllStringSubmatch(r.stdout, -1) {
				defer assertNothingLeft(t, m[1])
				r.runID, r.dir = m[1], m[2]
			}
			if r.exit != c.want {
				t.Fatalf("exit %d, want %d\n%s", r.exit, c.want, r.stdout)
			}
			if len(faultsHealed(t, r.dir)) == 0 {
				t.Fatal("no fault was injected")
			}
			health := readTest(t, r.dir).Health
			if !strings.Contains(health, "tcp_keepalives_count=1 tcp_keepalives_idle=1s tcp_keepalives_interval=1s tcp_user_timeout=2000ms") {
				t.Errorf("server settings for a 2 s TTL: %q", health)
			}
			log := postgresLog(t, r.dir)
			if c.server != "" && !strings.Contains(log, c.server) {
				t.Errorf("the server never logged %q", c.server)
			}
			if c.absent != "" && strings.Contains(log, c.absent) {
				t.Errorf("the server logged %q", c.absent)
			}
			if c.check != nil {
				c.check(t, r.dir, readReport(t, r.dir))
			}
		})
	}
}

// noGrantDuring fails if a client other than the one a fault froze was
// granted the lock from the time the fault held it from until its heal
// began (the resumed client may release before the heal is recorded as
// done).
func noGrantDuring(t *testing.T, dir string, f checkers.FaultEffect) {
	t.Helper()
	events := inTimeOrder(t, dir)
	if f.HeldFrom < f.Start {
		t.Errorf("fault %+v: held from before it started", f)
	}
	healing := f.End
	for _, e := range events {
		if e.Process == history.Nemesis && e.Type == history.Invoke && e.F == history.Stop && e.Time >= f.Start && e.Time <= f.End {
			healing = e.Time
		}
	}
	for _, e := range events {
		if e.F == history.Acquire && e.Type == history.OK && e.Time > f.HeldFrom && e.Time <= healing && !slices.Contains(f.Targets, e.Process) {
			t.Errorf("%s was granted the lock at %s, during the pause of %v", e.Process, history.Seconds(e.Time), f.Targets)
		}
	}
}

// tokensGrowAcrossKills fails unless a lock was granted after a kill and
// every token granted after it is above every token granted before: the
// committed sequence survived the crash.
func tokensGrowAcrossKills(t *testing.T, dir string) {
	t.Helper()
	var before, after int64
	killed := false
	for _, e := range inTimeOrder(t, dir) {
		switch {
		case e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info && e.Fault == "kill":
			killed = true
		case e.F == history.Acquire && e.Type == history.OK && !killed:
			before = max(before, e.Token)
		case e.F == history.Acquire && e.Type == history.OK && after == 0:
			after = e.Token
			if after <= before {
				t.Errorf("token %d granted after the kill, %d before it", after, before)
			}
		}
	}
	if !killed || after == 0 {
		t.Errorf("no grant after a kill (killed: %v)", killed)
	}
}
