package images

import "strings"

// JVM is the image for lock services that run on the JVM (ZooKeeper). Its
// tag is a hash of the node base and of what is installed over it, so it is
// built once, the first time a run needs it, and never rebuilt for a new
// lockbench binary: those nodes run no lockbench code.
const JVM Kind = "jvm"

// JVMPackages are Debian's ZooKeeper server with a headless JRE. Debian's
// `zookeeper` package would add the desktop JRE (GTK, Mesa, LLVM: about
// 280 MB more) for its ZooInspector GUI; `libzookeeper-java` holds the same
// 3.8.0 server, whose jar names its dependencies in its manifest.
var JVMPackages = []string{"openjdk-17-jre-headless", "libzookeeper-java"}

// jvmDockerfile installs JVMPackages over the node base, which brings the
// tools faults need (ip, iptables, ps).
func jvmDockerfile() string {
	return "FROM " + BaseTag + "\n" +
		"RUN apt-get update && apt-get install -y --no-install-recommends " + strings.Join(JVMPackages, " ") +
		" && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb\n"
}
