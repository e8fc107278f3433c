import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.ZooKeeper;

/**
 * Time to the first answered request of a new session, for bench/handshake.py: warm-up sessions, then
 * measured ones, one after the other; each one's ZooKeeper handle is made, exists("/") is called (it
 * waits behind the handshake and, with a JAAS Client section, the SASL exchange), and the handle closed.
 * Prints "wall <ns>" per measured session, then "cpu <ns>": the process CPU time of the measured ones.
 *
 * Usage: HandshakeBench host:port warmup count
 */
public final class HandshakeBench {
    private static long processCpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long session(String hosts) throws Exception {
        long t0 = System.nanoTime();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(hosts, 10000, event -> connected.countDown());
        if (!connected.await(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection");
        }
        zk.exists("/", false);
        long wall = System.nanoTime() - t0;
        zk.close();
        return wall;
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        int warmup = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        for (int i = 0; i < warmup; i++) {
            session(hosts);
        }
        long cpu0 = processCpu();
        for (int i = 0; i < count; i++) {
            System.out.println("wall " + session(hosts));
        }
        System.out.println("cpu " + (processCpu() - cpu0));
    }
}
