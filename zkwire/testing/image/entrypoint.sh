#!/bin/sh
# Entrypoint of the zkwire/zookeeper test image: one ZooKeeper server, configured from the environment
# and logging to stdout. The variables carry the names the official `zookeeper` image uses, so a test
# setup written for one runs on the other:
#
#   ZOO_TICK_TIME (2000)  ZOO_INIT_LIMIT (5)  ZOO_SYNC_LIMIT (2)  ZOO_MAX_CLIENT_CNXNS (60)
#   ZOO_STANDALONE_ENABLED (true)  ZOO_ADMINSERVER_ENABLED (false here)  ZOO_4LW_COMMANDS_WHITELIST (srvr)
#   ZOO_AUTOPURGE_PURGEINTERVAL (0)  ZOO_AUTOPURGE_SNAPRETAINCOUNT (3)
#   ZOO_CFG_EXTRA    space-separated key=value lines added to zoo.cfg
#   ZOO_SERVERS      space-separated server.N=host:quorumPort:electionPort[;clientPort] entries
#   ZOO_MY_ID        this member's id (with ZOO_SERVERS)
#   ZOO_DATA_DIR (/data)  ZOO_DATA_LOG_DIR (/datalog)  ZOO_CONF_DIR (/conf)
#   ZOO_LOG_LEVEL (INFO)
#   JVMFLAGS         JVM options, after the image's defaults (so they win)
#
# A zoo.cfg already present in ZOO_CONF_DIR (e.g. mounted) is used as it is. Any arguments replace the
# server command line (e.g. `docker run --rm IMAGE java -version`).
set -eu

if [ "$#" -gt 0 ]; then
    exec "$@"
fi

conf_dir=${ZOO_CONF_DIR:-/conf}
data_dir=${ZOO_DATA_DIR:-/data}
data_log_dir=${ZOO_DATA_LOG_DIR:-/datalog}
mkdir -p "$conf_dir" "$data_dir" "$data_log_dir"
cfg="$conf_dir/zoo.cfg"

if [ ! -f "$cfg" ]; then
    {
        echo "dataDir=$data_dir"
        echo "dataLogDir=$data_log_dir"
        echo "tickTime=${ZOO_TICK_TIME:-2000}"
        echo "initLimit=${ZOO_INIT_LIMIT:-5}"
        echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
        echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
        echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
        echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
        echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
        echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
        echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
        # Word splitting on purpose: both variables are lists of space-separated entries.
        for line in ${ZOO_CFG_EXTRA:-}; do
            echo "$line"
        done
        if [ -n "${ZOO_SERVERS:-}" ]; then
            for server in $ZOO_SERVERS; do
                echo "$server"
            done
        else
            echo "clientPort=2181"
        fi
    } >"$cfg"
fi
if [ ! -f "$data_dir/myid" ] && [ -n "${ZOO_MY_ID:-}" ]; then
    echo "$ZOO_MY_ID" >"$data_dir/myid"
fi

log4j="$conf_dir/log4j.properties"
if [ ! -f "$log4j" ]; then
    cat >"$log4j" <<PROPERTIES
log4j.rootLogger=${ZOO_LOG_LEVEL:-INFO}, STDOUT
log4j.appender.STDOUT=org.apache.log4j.ConsoleAppender
log4j.appender.STDOUT.Target=System.out
log4j.appender.STDOUT.layout=org.apache.log4j.PatternLayout
log4j.appender.STDOUT.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
PROPERTIES
fi

# zookeeper.jar's manifest names its other dependencies; the slf4j binding is chosen here (log4j 1.2),
# and the admin server's Jetty needs the servlet API, which the manifest leaves out.
jars=/usr/share/java
classpath="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar:$jars/slf4j-log4j12.jar:$jars/log4j-1.2.jar"
classpath="$classpath:$jars/netty-codec.jar:$jars/netty-resolver.jar:$jars/netty-transport-native-unix-common.jar"
classpath="$classpath:$jars/servlet-api.jar"

# Small, quick-starting test servers by default; JVMFLAGS come last and win.
defaults="-Xms16m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xshare:auto"
defaults="$defaults -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true -Djava.awt.headless=true"

# shellcheck disable=SC2086  # the flag lists are split into words on purpose
exec java $defaults \
    "-Dzookeeper.log.dir=$data_log_dir" "-Dlog4j.configuration=file:$log4j" -Dzookeeper.jmx.log4j.disable=true \
    ${JVMFLAGS:-} \
    -cp "$classpath" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
