// Takes an Apache Curator lock on a lock path in a loop.  Used by tests/test_curator_interop.py.
//
// Usage: CuratorLockWorker <connect> <lockPath> <counterPath> <iterations> [mutex|read|write]
// mutex (the default): InterProcessMutex; read / write: that side of InterProcessReadWriteLock.
// A mutex or writer bumps a version-checked counter inside its hold (a failed version check is a
// conflict); a reader reads the counter twice, a few milliseconds apart, and counts a conflict if it
// changed (a writer held the lock meanwhile).
// Prints "GRANT <i>" per grant and "DONE <conflicts>" at the end; exits 0.
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

public class CuratorLockWorker {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String lockPath = args[1];
        String counterPath = args[2];
        int iterations = Integer.parseInt(args[3]);
        String mode = args.length > 4 ? args[4] : "mutex";
        int conflicts = 0;
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10000, 5000, new ExponentialBackoffRetry(50, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            InterProcessMutex lock;
            if (mode.equals("mutex")) {
                lock = new InterProcessMutex(client, lockPath);
            } else {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, lockPath);
                lock = mode.equals("read") ? rw.readLock() : rw.writeLock();
            }
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(30, TimeUnit.SECONDS)) {
                    System.out.println("TIMEOUT");
                    System.exit(3);
                }
                try {
                    Stat stat = new Stat();
                    byte[] data = client.getData().storingStatIn(stat).forPath(counterPath);
                    Thread.sleep(mode.equals("mutex") ? 2 : 3);
                    if (mode.equals("read")) {
                        if (!Arrays.equals(data, client.getData().forPath(counterPath))) {
                            conflicts++;
                        }
                    } else {
                        int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
                        try {
                            client.setData().withVersion(stat.getVersion())
                                .forPath(counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                        } catch (KeeperException.BadVersionException e) {
                            conflicts++;
                        }
                    }
                    System.out.println("GRANT " + i);
                    System.out.flush();
                } finally {
                    lock.release();
                }
            }
        }
        System.out.println("DONE " + conflicts);
        System.out.flush();
    }
}
