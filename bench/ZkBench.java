// The Java peer of bench/run.py: the ZooKeeper Java client and Apache Curator 5.4.
// Usage: ZkBench <hosts> <metric> <path> <n>; prints one JSON object.  Warms its JVM up first.
import java.util.Arrays;
import java.util.concurrent.*;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.*;

public class ZkBench {
    static ZooKeeper connect(String hosts) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
        });
        up.await();
        return zk;
    }

    static double[] sequential(ZooKeeper zk, String path, int n) throws Exception {
        long[] lat = new long[n];
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            zk.getData(path, false, null);
            lat[i] = System.nanoTime() - t;
        }
        Arrays.sort(lat);
        return new double[] {lat[n / 2] / 1000.0, lat[(int) (n * 0.99)] / 1000.0};
    }

    static double pipelined(ZooKeeper zk, String path, int n) throws Exception {
        Semaphore window = new Semaphore(128);
        CountDownLatch done = new CountDownLatch(n);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            window.acquire();
            zk.getData(path, false, (rc, p, ctx, d, s) -> { window.release(); done.countDown(); }, null);
        }
        done.await();
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    static double createDelete(ZooKeeper zk, String path, int n) throws Exception {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            String p = zk.create(path + "/cd-", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
            zk.delete(p, -1);
        }
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    static double lockCycle(CuratorFramework cf, String path, int n) throws Exception {
        InterProcessMutex m = new InterProcessMutex(cf, path);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) { m.acquire(); m.release(); }
        return (System.nanoTime() - t0) / 1e6 / n;
    }

    static double contended(String hosts, String path, double seconds) throws Exception {
        CuratorFramework[] sessions = new CuratorFramework[2];
        for (int s = 0; s < 2; s++) {
            sessions[s] = CuratorFrameworkFactory.newClient(hosts, new RetryOneTime(100));
            sessions[s].start();
            sessions[s].blockUntilConnected();
        }
        long end = System.nanoTime() + (long) (seconds * 1e9);
        java.util.concurrent.atomic.AtomicLong grants = new java.util.concurrent.atomic.AtomicLong();
        Thread[] workers = new Thread[4];
        for (int w = 0; w < 4; w++) {
            InterProcessMutex m = new InterProcessMutex(sessions[w % 2], path);
            workers[w] = new Thread(() -> {
                try {
                    while (System.nanoTime() < end) { m.acquire(); grants.incrementAndGet(); m.release(); }
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            workers[w].start();
        }
        for (Thread t : workers) t.join();
        for (CuratorFramework cf : sessions) cf.close();
        return grants.get() / seconds;
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0], metric = a[1], path = a[2];
        int n = Integer.parseInt(a[3]);
        ZooKeeper zk = connect(hosts);
        String out;
        switch (metric) {
            case "seq": {
                sequential(zk, path, n);  // warm-up
                double[] r = sequential(zk, path, n);
                out = "{\"p50_us\": " + r[0] + ", \"p99_us\": " + r[1] + "}";
                break;
            }
            case "pipelined": {
                pipelined(zk, path, n);
                out = "{\"ops_per_s\": " + pipelined(zk, path, n) + "}";
                break;
            }
            case "create_delete": {
                createDelete(zk, path, n / 2);
                out = "{\"ops_per_s\": " + createDelete(zk, path, n) + "}";
                break;
            }
            case "lock_cycle": {
                CuratorFramework cf = CuratorFrameworkFactory.newClient(hosts, new RetryOneTime(100));
                cf.start();
                cf.blockUntilConnected();
                lockCycle(cf, path + "/curator-cycle", n / 2);
                out = "{\"ms\": " + lockCycle(cf, path + "/curator-cycle", n) + "}";
                cf.close();
                break;
            }
            case "contended": {
                contended(hosts, path + "/curator-contended", 1.0);
                out = "{\"grants_per_s\": " + contended(hosts, path + "/curator-contended", n / 1000.0) + "}";
                break;
            }
            default:
                throw new IllegalArgumentException(metric);
        }
        zk.close();
        System.out.println(out);
    }
}
