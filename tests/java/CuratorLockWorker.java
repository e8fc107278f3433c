// Contends for a lock path with Apache Curator's InterProcessMutex and bumps a version-checked counter
// inside the critical section.  Used by tests/test_curator_interop.py.
//
// Usage: CuratorLockWorker <connect> <lockPath> <counterPath> <iterations>
// Prints "GRANT <n>" per grant and "DONE <conflicts>" at the end; exits 0.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorLockWorker {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String lockPath = args[1];
        String counterPath = args[2];
        int iterations = Integer.parseInt(args[3]);
        int conflicts = 0;
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10000, 5000, new ExponentialBackoffRetry(50, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            InterProcessMutex mutex = new InterProcessMutex(client, lockPath);
            for (int i = 0; i < iterations; i++) {
                if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                    System.out.println("TIMEOUT");
                    System.exit(3);
                }
                try {
                    Stat stat = new Stat();
                    byte[] data = client.getData().storingStatIn(stat).forPath(counterPath);
                    int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
                    Thread.sleep(2);
                    try {
                        client.setData().withVersion(stat.getVersion())
                            .forPath(counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                    } catch (KeeperException.BadVersionException e) {
                        conflicts++;
                    }
                    System.out.println("GRANT " + value);
                    System.out.flush();
                } finally {
                    mutex.release();
                }
            }
        }
        System.out.println("DONE " + conflicts);
        System.out.flush();
    }
}
