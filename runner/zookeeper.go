package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockbench/lockbench/clusters"
)

var zkNames = []string{"z1", "z2", "z3"}

// zkSyncLimit is how many ticks a follower waits for its leader before it
// stops serving (and the leader for a follower's acknowledgement). The
// exclusion checker's ZooKeeper lease bound is computed from it and from
// zkTick.
const zkSyncLimit = 2

// zkTick is ZooKeeper's tickTime for a lease of ttl: an eighth of it, well
// under the quarter beyond which the default minimum session timeout
// (2 × tickTime) would outlast a pause of twice the TTL, and short enough
// that a follower cut off from its leader stops answering within ttl/4.
func zkTick(ttl time.Duration) time.Duration { return ttl / 8 }

// zkConfig is the members' zoo.cfg. The session timeout is pinned to the
// TTL (minSessionTimeout = maxSessionTimeout): the server clamps what a
// client asks for into that range, so the negotiated timeout is the TTL.
// forceSync=no for the reason etcd runs without fsync: a killed process
// loses nothing the page cache holds, and fsync would time the overlay's
// disk. Only `srvr` is needed among the four-letter words, and it is the
// only one ZooKeeper 3.8 allows by default.
func zkConfig(ttl time.Duration) string {
	tick := zkTick(ttl).Milliseconds()
	lines := []string{
		fmt.Sprintf("tickTime=%d", tick),
		"initLimit=40",
		fmt.Sprintf("syncLimit=%d", zkSyncLimit),
		fmt.Sprintf("minSessionTimeout=%d", ttl.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", ttl.Milliseconds()),
		"dataDir=/var/lib/zookeeper",
		"clientPort=2181",
		"forceSync=no",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr",
	}
	for i, n := range zkNames {
		lines = append(lines, fmt.Sprintf("server.%d=%s:2888:3888", i+1, n))
	}
	return strings.Join(lines, "\n")
}

// zkServices are the three members, on the JVM image. Each writes its
// config and id at start, so a restart after a kill finds them again, with
// its data directory as the kill left it. The heap is small and the
// serial collector keeps three JVMs light on a small machine.
func zkServices(cfg *Config) []service {
	var out []service
	for i, n := range zkNames {
		out = append(out, service{
			node: clusters.Node{Name: n, Role: "zookeeper", JVM: true, Cmd: []string{"sh", "-c",
				"mkdir -p /var/lib/zookeeper && echo " + fmt.Sprint(i+1) + " > /var/lib/zookeeper/myid && " +
					"printf '%s\\n' \"$0\" > /etc/zookeeper.cfg && " +
					"exec java -Xms32m -Xmx192m -XX:+UseSerialGC -cp /usr/share/java/zookeeper.jar " +
					"org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/zookeeper.cfg",
				zkConfig(cfg.TTL.D())}},
			probe: zkSrvr("127.0.0.1"),
		})
	}
	return out
}

// zkSrvr asks the member at host for `srvr`, with bash's /dev/tcp: the
// JVM image holds no lockbench binary and no netcat.
func zkSrvr(host string) []string {
	return []string{"bash", "-c", `exec 3<>/dev/tcp/` + host + `/2181 && echo srvr >&3 && timeout 2 cat <&3 | grep '^Mode: '`}
}

// zkVersion prints the member's version, as `srvr` reports it.
var zkVersion = []string{"bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/2181 && echo srvr >&3 && timeout 2 cat <&3 | sed -n 's/^Zookeeper version: //p'`}

// zkReady is the ensemble's readiness: every member serves, as leader or
// follower, and exactly one leads. It prints one line for test.json.
func zkReady(*Config) []string {
	return []string{"bash", "-c", `leaders=""; for h in ` + strings.Join(zkNames, " ") + `; do ` +
		`m=$(exec 3<>/dev/tcp/$h/2181 && echo srvr >&3 && timeout 2 cat <&3 | sed -n 's/^Mode: //p'); ` +
		`case "$m" in leader) leaders="$leaders $h";; follower) ;; *) echo "$h: ${m:-no answer}"; exit 1;; esac; done; ` +
		`set -- $leaders; [ $# -eq 1 ] || { echo "leaders:$leaders"; exit 1; }; ` +
		`echo "` + fmt.Sprint(len(zkNames)) + ` members, leader $1"`}
}

// zkLeader asks each member whether it leads; a paused or cut-off member
// does not answer, and one that lost its quorum no longer says leader.
func (r *run) zkLeader(ctx context.Context) (string, error) {
	for _, n := range zkNames {
		out, err := r.cluster.Exec(ctx, n, zkSrvr("127.0.0.1")...)
		if err == nil && strings.TrimSpace(out) == "Mode: leader" {
			return n, nil
		}
	}
	return "", fmt.Errorf("no member of %s says it leads", strings.Join(zkNames, ", "))
}
