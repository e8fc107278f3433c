// Takes Apache Curator locks for tests/test_curator_interop.py.
//
// Loop mode:  CuratorLockWorker <connect> <lockPath> <counterPath> <iterations> [MODE]
//   MODE is mutex (the default, InterProcessMutex), read / write (that side of
//   InterProcessReadWriteLock), latch (LeaderLatch: lead, then close the latch) or semaphore:N
//   (InterProcessSemaphoreV2 with N leases).
//   Prints READY once connected and warmed up (the recipe taken once on <lockPath>-warmup), then per grant "HOLD <kind> <start> <end>" (kind x exclusive, s shared,
//   l lease; times in microseconds since the epoch, taken right after the grant and right before the
//   release), and "DONE <conflicts>" at the end; exits 0.
//   An exclusive holder bumps a version-checked counter (a failed version check is a conflict); a reader
//   reads the counter twice, a few milliseconds apart, and counts a conflict if it changed; a lease
//   holder adds one to the counter (a compare-and-set loop), counts a conflict if the result exceeds N,
//   and takes its one back before releasing.
//
// Probe mode: CuratorLockWorker <connect> serve
//   Reads commands from stdin, one a line, and answers each with one line:
//     try <kind> <path> <millis>  kind: mutex, read, write, latch, semaphore:N; answers GOT (and keeps
//                                 holding) or BUSY (nothing left behind) after at most <millis>
//     release                     releases everything held; answers RELEASED
//     quit                        exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorLockWorker {
    /** One held lock of any recipe, released by close(). */
    interface Held extends AutoCloseable {
        @Override
        void close() throws Exception;
    }

    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    }

    static CuratorFramework connect(String connect) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            connect, 10000, 5000, new ExponentialBackoffRetry(50, 5));
        client.start();
        client.blockUntilConnected(20, TimeUnit.SECONDS);
        return client;
    }

    /** Takes the lock of {@code kind} on {@code path} within {@code millis}, or returns null. */
    static Held take(CuratorFramework client, String kind, String path, long millis) throws Exception {
        if (kind.equals("latch")) {
            LeaderLatch latch = new LeaderLatch(client, path, "curator");
            latch.start();
            if (latch.await(millis, TimeUnit.MILLISECONDS)) {
                return latch::close;
            }
            latch.close();
            return null;
        }
        if (kind.startsWith("semaphore:")) {
            int leases = Integer.parseInt(kind.substring("semaphore:".length()));
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, leases);
            Lease lease = semaphore.acquire(millis, TimeUnit.MILLISECONDS);
            return lease == null ? null : lease::close;
        }
        InterProcessMutex lock;
        if (kind.equals("mutex")) {
            lock = new InterProcessMutex(client, path);
        } else {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            lock = kind.equals("read") ? rw.readLock() : rw.writeLock();
        }
        if (!lock.acquire(millis, TimeUnit.MILLISECONDS)) {
            return null;
        }
        return lock::release;
    }

    /** Adds delta to the number in counterPath with a compare-and-set loop; returns the new value. */
    static int add(CuratorFramework client, String counterPath, int delta) throws Exception {
        while (true) {
            Stat stat = new Stat();
            byte[] data = client.getData().storingStatIn(stat).forPath(counterPath);
            int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8)) + delta;
            try {
                client.setData().withVersion(stat.getVersion())
                    .forPath(counterPath, Integer.toString(value).getBytes(StandardCharsets.UTF_8));
                return value;
            } catch (KeeperException.BadVersionException e) {
                // another holder changed it meanwhile: read again
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[1].equals("serve")) {
            serve(args[0]);
            return;
        }
        String connect = args[0];
        String lockPath = args[1];
        String counterPath = args[2];
        int iterations = Integer.parseInt(args[3]);
        String mode = args.length > 4 ? args[4] : "mutex";
        int leases = mode.startsWith("semaphore:") ? Integer.parseInt(mode.substring("semaphore:".length())) : 0;
        String kind = mode.equals("read") ? "s" : leases > 0 ? "l" : "x";
        int conflicts = 0;
        try (CuratorFramework client = connect(connect)) {
            // Warm up (class loading, first requests) on another path, so that the loop below starts
            // taking turns as soon as READY is out.
            Held warmUp = take(client, mode, lockPath + "-warmup", 60_000);
            if (warmUp != null) {
                warmUp.close();
            }
            client.getData().forPath(counterPath);
            System.out.println("READY");
            System.out.flush();
            for (int i = 0; i < iterations; i++) {
                Held held = take(client, mode, lockPath, 60_000);
                if (held == null) {
                    System.out.println("TIMEOUT");
                    System.exit(3);
                }
                long start = micros();
                long end;
                try {
                    if (kind.equals("l")) {
                        if (add(client, counterPath, 1) > leases) {
                            conflicts++;
                        }
                        Thread.sleep(4);
                        add(client, counterPath, -1);
                    } else {
                        Stat stat = new Stat();
                        byte[] data = client.getData().storingStatIn(stat).forPath(counterPath);
                        Thread.sleep(3);
                        if (kind.equals("s")) {
                            if (!Arrays.equals(data, client.getData().forPath(counterPath))) {
                                conflicts++;
                            }
                        } else {
                            int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8));
                            try {
                                client.setData().withVersion(stat.getVersion()).forPath(
                                    counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                            } catch (KeeperException.BadVersionException e) {
                                conflicts++;
                            }
                        }
                    }
                    end = micros();
                } finally {
                    held.close();
                }
                System.out.println("HOLD " + kind + " " + start + " " + end);
                System.out.flush();
            }
        }
        System.out.println("DONE " + conflicts);
        System.out.flush();
    }

    static void serve(String connect) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<Held> held = new ArrayList<>();
        try (CuratorFramework client = connect(connect)) {
            System.out.println("READY");
            System.out.flush();
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split(" ");
                String answer;
                if (words[0].equals("try")) {
                    Held h = take(client, words[1], words[2], Long.parseLong(words[3]));
                    if (h != null) {
                        held.add(h);
                    }
                    answer = h != null ? "GOT" : "BUSY";
                } else if (words[0].equals("release")) {
                    for (Held h : held) {
                        h.close();
                    }
                    held.clear();
                    answer = "RELEASED";
                } else if (words[0].equals("quit")) {
                    break;
                } else {
                    answer = "ERROR unknown command: " + line;
                }
                System.out.println(answer);
                System.out.flush();
            }
            for (Held h : held) {
                h.close();
            }
        }
    }
}
