// Takes Apache Curator's InterProcessReadWriteLock (read or write side) on a lock path in a loop.
// Used by tests/test_curator_interop.py.
//
// Usage: CuratorRWLockWorker <connect> <lockPath> <counterPath> <iterations> <read|write>
// A writer bumps a version-checked counter inside its hold; a reader reads the counter twice, a few
// milliseconds apart, and counts a violation if it changed (a writer held the lock meanwhile).
// Prints "GRANT <n>" per grant and "DONE <conflicts or violations>" at the end; exits 0.
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorRWLockWorker {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String lockPath = args[1];
        String counterPath = args[2];
        int iterations = Integer.parseInt(args[3]);
        boolean write = args[4].equals("write");
        int bad = 0;
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10000, 5000, new ExponentialBackoffRetry(50, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, lockPath);
            InterProcessMutex lock = write ? rw.writeLock() : rw.readLock();
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(30, TimeUnit.SECONDS)) {
                    System.out.println("TIMEOUT");
                    System.exit(3);
                }
                try {
                    Stat stat = new Stat();
                    byte[] data = client.getData().storingStatIn(stat).forPath(counterPath);
                    Thread.sleep(3);
                    if (write) {
                        int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
                        try {
                            client.setData().withVersion(stat.getVersion())
                                .forPath(counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                        } catch (KeeperException.BadVersionException e) {
                            bad++;
                        }
                    } else if (!Arrays.equals(data, client.getData().forPath(counterPath))) {
                        bad++;
                    }
                    System.out.println("GRANT " + i);
                    System.out.flush();
                } finally {
                    lock.release();
                }
            }
        }
        System.out.println("DONE " + bad);
        System.out.flush();
    }
}
