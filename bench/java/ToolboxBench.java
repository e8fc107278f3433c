// Curator's side of bench/toolbox.py: prints one line "SECONDS <elapsed>" (or "LATENCY <median ms>").
//   ToolboxBench counter <hosts> <path> <workers> <increments each>   SharedCount, trySetCount loops
//   ToolboxBench squeue <hosts> <path> <items>                         SimpleDistributedQueue offer, then poll
//   ToolboxBench discovery <hosts> <basePath> <service> <queries>      queryForInstances, median latency
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;

public class ToolboxBench {
    static CuratorFramework client(String hosts) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 10000, 10000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "counter": {
                int workers = Integer.parseInt(a[3]);
                int each = Integer.parseInt(a[4]);
                List<CuratorFramework> clients = new ArrayList<>();
                List<SharedCount> counts = new ArrayList<>();
                for (int i = 0; i < workers; i++) {
                    CuratorFramework c = client(a[1]);
                    SharedCount s = new SharedCount(c, a[2], 0);
                    s.start();
                    clients.add(c);
                    counts.add(s);
                }
                List<Thread> threads = new ArrayList<>();
                long start = System.nanoTime();
                for (SharedCount s : counts) {
                    Thread t = new Thread(() -> {
                        try {
                            for (int n = 0; n < each; n++) {
                                while (true) {
                                    VersionedValue<Integer> v = s.getVersionedValue();
                                    if (s.trySetCount(v, v.getValue() + 1)) {
                                        break;
                                    }
                                }
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                for (Thread t : threads) {
                    t.join();
                }
                System.out.println("SECONDS " + (System.nanoTime() - start) / 1e9);
                for (SharedCount s : counts) {
                    s.close();
                }
                for (CuratorFramework c : clients) {
                    c.close();
                }
                return;
            }
            case "squeue": {
                CuratorFramework c = client(a[1]);
                SimpleDistributedQueue q = new SimpleDistributedQueue(c, a[2]);
                int items = Integer.parseInt(a[3]);
                long start = System.nanoTime();
                for (int n = 0; n < items; n++) {
                    q.offer(("item-" + n).getBytes());
                }
                for (int n = 0; n < items; n++) {
                    if (q.poll() == null) {
                        throw new IllegalStateException("empty");
                    }
                }
                System.out.println("SECONDS " + (System.nanoTime() - start) / 1e9);
                c.close();
                return;
            }
            case "discovery": {
                CuratorFramework c = client(a[1]);
                ServiceDiscovery<Map> d = ServiceDiscoveryBuilder.builder(Map.class).client(c).basePath(a[2]).build();
                d.start();
                int queries = Integer.parseInt(a[4]);
                for (int n = 0; n < 50; n++) {
                    d.queryForInstances(a[3]);
                }
                List<Double> ms = new ArrayList<>();
                for (int n = 0; n < queries; n++) {
                    long t = System.nanoTime();
                    d.queryForInstances(a[3]);
                    ms.add((System.nanoTime() - t) / 1e6);
                }
                Collections.sort(ms);
                System.out.println("LATENCY " + ms.get(ms.size() / 2));
                d.close();
                c.close();
                return;
            }
            default:
                throw new IllegalArgumentException(a[0]);
        }
    }
}
