// The Java peer of bench/run.py: the ZooKeeper Java client 3.8 and Apache Curator 5.4.
//
// Usage: java ZkBench <metric> <hosts> <path> key=value...   (keys as in bench/peers/__init__.py Params)
// Prints one line "RESULT {json}".  Every metric runs a warm-up phase of the same code first, in the same
// JVM, so the measured phase runs JIT-compiled code; every loop is bounded in count and time.
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class ZkBench {
    static String hosts;
    static String path;
    static Map<String, Double> p = new HashMap<>();

    static double param(String k) {
        Double v = p.get(k);
        if (v == null) throw new IllegalArgumentException("missing parameter " + k);
        return v;
    }

    static int iparam(String k) {
        return (int) param(k);
    }

    /** Warm-up duration: the common one plus the JIT's extra. */
    static double warm() {
        return param("warm") + param("jit_warm");
    }

    static long deadlineAfter(double seconds) {
        return System.nanoTime() + (long) (seconds * 1e9);
    }

    static String unique(String prefix) {
        return prefix + "-" + ProcessHandle.current().pid() + "-" + (System.nanoTime() % 1_000_000_000L);
    }

    static ZooKeeper connect() throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
        });
        if (!up.await((long) param("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("no session");
        return zk;
    }

    static CuratorFramework curator() throws Exception {
        CuratorFramework cf = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryOneTime(100))
                .build();
        cf.start();
        if (!cf.blockUntilConnected(iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("no session");
        return cf;
    }

    /** CPU time of this process (all threads: the client's, the JIT's, the GC's), in nanoseconds. */
    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** Bound on a wait that grows with the size: timeout plus 10 ms per waiter or session. */
    static long waitBoundMillis() {
        return (long) ((param("timeout") + param("arg") / 100) * 1000);
    }

    static double[] percentiles(long[] lat, int n, double scale) {
        long[] s = Arrays.copyOf(lat, n);
        Arrays.sort(s);
        return new double[] {s[n / 2] * scale, s[Math.min(n - 1, (int) (n * 0.99))] * scale};
    }

    static String json(Object... kv) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < kv.length; i += 2) {
            if (i > 0) b.append(", ");
            b.append('"').append(kv[i]).append("\": ");
            Object v = kv[i + 1];
            if (v == null) b.append("null");
            else if (v instanceof Double) b.append(String.format(Locale.ROOT, "%.6f", (Double) v));
            else b.append(v);
        }
        return b.append('}').toString();
    }

    // ------------------------------------------------------------------ ZooKeeper client

    static String seq() throws Exception {
        ZooKeeper zk = connect();
        long maxOps = (long) param("max_ops");
        long end = deadlineAfter(warm());
        for (long i = 0; i < maxOps && System.nanoTime() < end; i++) zk.getData(path, false, null);
        int samples = iparam("samples");
        long[] lat = new long[samples];
        int n = 0;
        long cpu0 = cpuNanos(), t0 = System.nanoTime();
        end = t0 + (long) (param("measure") * 1e9);
        while (n < samples && System.nanoTime() < end) {
            long t = System.nanoTime();
            zk.getData(path, false, null);
            lat[n++] = System.nanoTime() - t;
        }
        long cpu = cpuNanos() - cpu0, elapsed = System.nanoTime() - t0;
        zk.close();
        double[] pc = percentiles(lat, n, 1e-3);
        int k = Math.max(1, n);
        return json("p50_us", pc[0], "p99_us", pc[1], "mean_us", elapsed / 1e3 / k, "cpu_us_per_op", cpu / 1e3 / k,
                "samples", n);
    }

    static double[] pipelinedPhase(ZooKeeper zk, double seconds) throws Exception {
        int window = iparam("window");
        long maxOps = (long) param("max_ops");
        Semaphore slots = new Semaphore(window);
        long issued = 0;
        long t0 = System.nanoTime();
        long end = t0 + (long) (seconds * 1e9);
        while (issued < maxOps && System.nanoTime() < end) {
            slots.acquire();
            zk.getData(path, false, (rc, pth, ctx, data, stat) -> slots.release(), null);
            issued++;
        }
        if (!slots.tryAcquire(window, iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("replies lost");
        return new double[] {issued, (System.nanoTime() - t0) / 1e9};
    }

    static String pipelined() throws Exception {
        ZooKeeper zk = connect();
        pipelinedPhase(zk, warm());
        double[] r = pipelinedPhase(zk, param("measure"));
        zk.close();
        return json("ops_per_s", r[0] / r[1], "ops", (long) r[0]);
    }

    static double[] createDeletePhase(ZooKeeper zk, String prefix, double seconds) throws Exception {
        long maxOps = (long) param("max_ops");
        long n = 0;
        long t0 = System.nanoTime();
        long end = t0 + (long) (seconds * 1e9);
        while (n < maxOps && System.nanoTime() < end) {
            String created = zk.create(prefix, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
            zk.delete(created, -1);
            n += 2;
        }
        return new double[] {n, (System.nanoTime() - t0) / 1e9};
    }

    static String createDelete() throws Exception {
        ZooKeeper zk = connect();
        String prefix = path + "/" + unique("cd") + "-";
        createDeletePhase(zk, prefix, warm());
        double[] r = createDeletePhase(zk, prefix, param("measure"));
        zk.close();
        return json("ops_per_s", r[0] / r[1], "ops", (long) r[0]);
    }

    // ------------------------------------------------------------------ Curator locks

    static double[] lockCyclePhase(InterProcessMutex m, double seconds) throws Exception {
        long maxOps = (long) param("max_ops");
        long n = 0;
        long t0 = System.nanoTime();
        long end = t0 + (long) (seconds * 1e9);
        while (n < maxOps && System.nanoTime() < end) {
            if (!m.acquire(iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("lock timeout");
            m.release();
            n++;
        }
        return new double[] {n, (System.nanoTime() - t0) / 1e9};
    }

    static String lockCycle() throws Exception {
        CuratorFramework cf = curator();
        InterProcessMutex m = new InterProcessMutex(cf, path + "/" + unique("curator-cycle"));
        lockCyclePhase(m, warm());
        double[] r = lockCyclePhase(m, param("measure"));
        cf.close();
        return json("ms", r[1] / r[0] * 1e3, "cycles", (long) r[0]);
    }

    static long contendedPhase(CuratorFramework[] sessions, String lockPath, double seconds) throws Exception {
        long end = deadlineAfter(seconds);
        long maxOps = (long) param("max_ops");
        AtomicLong grants = new AtomicLong();
        int workers = iparam("workers");
        Thread[] threads = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            InterProcessMutex m = new InterProcessMutex(sessions[w % sessions.length], lockPath);
            threads[w] = new Thread(() -> {
                try {
                    while (System.nanoTime() < end && grants.get() < maxOps) {
                        if (!m.acquire(iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("lock timeout");
                        if (System.nanoTime() < end) grants.incrementAndGet();
                        m.release();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[w].start();
        }
        for (Thread t : threads) t.join((long) ((seconds + param("timeout")) * 1000));
        return grants.get();
    }

    static String contended() throws Exception {
        CuratorFramework[] sessions = new CuratorFramework[iparam("sessions")];
        for (int s = 0; s < sessions.length; s++) sessions[s] = curator();
        String lockPath = path + "/" + unique("curator-contended");
        contendedPhase(sessions, lockPath, warm());
        long grants = contendedPhase(sessions, lockPath, param("measure"));
        for (CuratorFramework cf : sessions) cf.close();
        return json("grants_per_s", grants / param("measure"), "grants", grants);
    }

    /** Acquires and releases one InterProcessMutex on command (Curator's mutex is owned by a thread). */
    static final class Worker extends Thread {
        final InterProcessMutex mutex;
        final BlockingQueue<String> commands = new LinkedBlockingQueue<>();
        final BlockingQueue<Long> replies = new LinkedBlockingQueue<>();

        Worker(InterProcessMutex mutex) {
            this.mutex = mutex;
            setDaemon(true);
        }

        long reply() throws Exception {
            Long t = replies.poll((long) param("timeout"), TimeUnit.SECONDS);
            if (t == null) throw new IllegalStateException("worker did not answer");
            return t;
        }

        @Override
        public void run() {
            try {
                while (true) {
                    String cmd = commands.take();
                    if (cmd.equals("stop")) return;
                    long t;
                    if (cmd.equals("acquire")) {
                        if (!mutex.acquire(iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("lock timeout");
                        t = System.nanoTime();
                    } else {
                        t = System.nanoTime();
                        mutex.release();
                    }
                    replies.put(t);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }
    }

    static String handoff() throws Exception {
        CuratorFramework a = curator(), b = curator();
        String lockPath = path + "/" + unique("curator-handoff");
        Worker[] workers = {new Worker(new InterProcessMutex(a, lockPath)), new Worker(new InterProcessMutex(b, lockPath))};
        for (Worker w : workers) w.start();
        int handoffs = iparam("handoffs");
        int total = handoffs + Math.max(5, handoffs / 10);
        long[] lat = new long[total];
        int n = 0;
        workers[0].commands.put("acquire");
        workers[0].reply();
        int holder = 0;
        long end = deadlineAfter(param("timeout") + warm());
        long warmEnd = deadlineAfter(param("jit_warm"));
        for (int k = 0; k < total && System.nanoTime() < end; k++) {
            if (k == total - handoffs && System.nanoTime() < warmEnd) k = 0;  // JIT warm-up: keep going
            int waiter = 1 - holder;
            workers[waiter].commands.put("acquire");
            long limit = deadlineAfter(param("timeout"));
            while (a.getChildren().forPath(lockPath).size() < 2) {
                if (System.nanoTime() > limit) throw new IllegalStateException("waiter did not queue");
                Thread.sleep(1);
            }
            Thread.sleep(5);
            workers[holder].commands.put("release");
            long t0 = workers[holder].reply();
            long t1 = workers[waiter].reply();
            if (k >= total - handoffs) lat[n++] = t1 - t0;
            holder = waiter;
        }
        workers[holder].commands.put("release");
        workers[holder].reply();
        for (Worker w : workers) w.commands.put("stop");
        a.close();
        b.close();
        double[] pc = percentiles(lat, n, 1e-6);
        return json("p50_ms", pc[0], "p99_ms", pc[1], "handoffs", n);
    }

    /** Watches the server holds now (all sessions): mntr's zk_watch_count. */
    static long serverWatchCount() throws Exception {
        for (String line : mntr().split("\n")) {
            String[] f = line.split("\t");
            if (f.length == 2 && f[0].equals("zk_watch_count")) return (long) Double.parseDouble(f[1].trim());
        }
        throw new IllegalStateException("mntr has no zk_watch_count");
    }

    static String mntr() throws Exception {
        return fourLetterWord("mntr");
    }

    static String fourLetterWord(String word) throws Exception {
        String[] hp = hosts.split(",")[0].split("/")[0].split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            s.setSoTimeout(30000);
            OutputStream out = s.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            byte[] chunk = new byte[65536];
            int k;
            while ((k = in.read(chunk)) > 0) buf.write(chunk, 0, k);
            return buf.toString(StandardCharsets.UTF_8);
        }
    }

    static long serverWatchTriggers() throws Exception {
        long total = 0;
        for (String line : mntr().split("\n")) {
            String[] f = line.split("\t");
            if (f.length == 2 && f[0].startsWith("zk_sum_node_") && f[0].endsWith("_watch_count")) {
                total += (long) Double.parseDouble(f[1].trim());
            }
        }
        return total;
    }

    static String herd() throws Exception {
        CuratorFramework holderCf = curator(), cf = curator();
        String lockPath = path + "/" + unique("curator-herd");
        InterProcessMutex holder = new InterProcessMutex(holderCf, lockPath);
        holder.acquire();
        int waiters = iparam("waiters");
        CountDownLatch done = new CountDownLatch(waiters);
        List<Thread> threads = new ArrayList<>();
        long watches = serverWatchCount() + waiters - 1;
        for (int i = 0; i < waiters; i++) {
            InterProcessMutex m = new InterProcessMutex(cf, lockPath);
            Thread t = new Thread(() -> {
                try {
                    if (m.acquire(iparam("timeout"), TimeUnit.SECONDS)) {
                        m.release();
                        done.countDown();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        long limit = deadlineAfter(param("timeout"));
        while (holderCf.getChildren().forPath(lockPath).size() < waiters + 1 || serverWatchCount() < watches) {
            if (System.nanoTime() > limit) throw new IllegalStateException("waiters did not queue");
            Thread.sleep(10);
        }
        Thread.sleep(200);
        long before = serverWatchTriggers();
        long t0 = System.nanoTime();
        holder.release();
        if (!done.await(iparam("timeout"), TimeUnit.SECONDS)) throw new IllegalStateException("the queue did not drain");
        double drain = (System.nanoTime() - t0) / 1e9;
        Thread.sleep(200);
        long after = serverWatchTriggers();
        cf.close();
        holderCf.close();
        return json("server_triggers_per_release", (after - before) / (double) waiters, "wakeups_per_release", null,
                "drain_grants_per_s", waiters / drain, "waiters", waiters);
    }

    /** As bench/peers/__init__.py server_counters: ss's bytes_sent of the server's connections, mntr's zk_packets_sent. */
    static Map<String, Long> serverCounters() throws Exception {
        Map<String, Long> out = new HashMap<>();
        for (String line : mntr().split("\n")) {
            String[] f = line.split("\t");
            if (f.length == 2 && f[0].equals("zk_packets_sent")) out.put(f[0], (long) Double.parseDouble(f[1].trim()));
        }
        String port = hosts.split(",")[0].split("/")[0].split(":")[1];
        Process ss = new ProcessBuilder("ss", "-tinH", "state", "established", "( sport = :" + port + " )").start();
        String text = new String(ss.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!ss.waitFor(10, TimeUnit.SECONDS) || ss.exitValue() != 0) throw new IllegalStateException("ss failed");
        long sent = 0;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("bytes_sent:(\\d+)").matcher(text);
        while (m.find()) sent += Long.parseLong(m.group(1));
        out.put("tcp_bytes_sent", sent);
        return out;
    }

    /** As bench/peers/__init__.py lock_watch_count: watches on lockPath and below, from wchp. */
    static long lockWatchCount(String lockPath) throws Exception {
        long count = 0;
        boolean inside = false;
        for (String line : fourLetterWord("wchp").split("\n")) {
            if (line.isBlank()) continue;
            if (line.charAt(0) == ' ' || line.charAt(0) == '\t') {
                if (inside) count++;
            } else {
                inside = line.equals(lockPath) || line.startsWith(lockPath + "/");
            }
        }
        return count;
    }

    /** Waits (bounded) until the server holds `watches` watches on the lock and it has `nodes` children. */
    static void queued(CuratorFramework holderCf, String lockPath, int nodes, long watches) throws Exception {
        long limit = System.nanoTime() + waitBoundMillis() * 1_000_000L;
        while (lockWatchCount(lockPath) < watches || holderCf.getChildren().forPath(lockPath).size() < nodes) {
            if (System.nanoTime() > limit) throw new IllegalStateException("waiters did not queue");
            Thread.sleep(20);
        }
    }

    /** Scale: `arg` waiters (one thread each: Curator's acquire blocks) in one session behind a holder. */
    static String waiters() throws Exception {
        int n = iparam("arg");
        CuratorFramework holderCf = curator(), cf = curator();
        String lockPath = path + "/" + unique("curator-scale");
        InterProcessMutex holder = new InterProcessMutex(holderCf, lockPath);
        holder.acquire();
        CountDownLatch done = new CountDownLatch(n);
        long heap0 = heapUsed(), rss0 = rss();
        long watches = lockWatchCount(lockPath) + n - 1;
        long t = System.nanoTime();
        for (int i = 0; i < n; i++) {
            InterProcessMutex m = new InterProcessMutex(cf, lockPath);
            Thread th = new Thread(() -> {
                try {
                    if (m.acquire(waitBoundMillis(), TimeUnit.MILLISECONDS)) {
                        m.release();
                        done.countDown();
                    }
                } catch (Exception e) {
                    // the session closed under it
                }
            });
            th.setDaemon(true);
            th.start();
        }
        queued(holderCf, lockPath, n + 1, watches);
        double queueS = (System.nanoTime() - t) / 1e9;
        long heap = heapUsed() - heap0, rss = rss() - rss0;
        Map<String, Long> before = serverCounters();
        long cpu0 = cpuNanos();
        t = System.nanoTime();
        holder.release();
        if (!done.await(waitBoundMillis(), TimeUnit.MILLISECONDS)) throw new IllegalStateException("the queue did not drain");
        double drain = (System.nanoTime() - t) / 1e9;
        long cpu = cpuNanos() - cpu0;
        Map<String, Long> after = serverCounters();
        cf.close();
        holderCf.close();
        return json("queue_s", queueS, "drain_grants_per_s", n / drain, "rss_kib", rss / (double) n / 1024,
                "heap_kib", heap / (double) n / 1024, "cpu_us_per_grant", cpu / 1e3 / n,
                "server_bytes_per_grant", (after.get("tcp_bytes_sent") - before.get("tcp_bytes_sent")) / (double) n,
                "server_packets_per_grant", (after.get("zk_packets_sent") - before.get("zk_packets_sent")) / (double) n,
                "waiters", n);
    }

    /** Scale: `arg` sessions in one process; RSS per session, then one getData per session in turn. */
    static String sessions() throws Exception {
        int n = iparam("arg");
        ZooKeeper first = connect();  // one-time costs
        first.getData(path, false, null);
        heapUsed();
        long rss0 = rss();
        List<ZooKeeper> clients = new ArrayList<>();
        long t = System.nanoTime();
        long limit = t + waitBoundMillis() * 1_000_000L;
        for (int i = 0; i < n; i++) {
            if (System.nanoTime() > limit) throw new IllegalStateException("sessions did not open");
            clients.add(connect());
        }
        double openS = (System.nanoTime() - t) / 1e9;
        Thread.sleep(300);
        heapUsed();
        long rss = rss() - rss0;
        double[] r = null;
        for (double seconds : new double[] {warm(), param("measure")}) {
            long maxOps = (long) param("max_ops");
            long i = 0, cpu0 = cpuNanos(), t0 = System.nanoTime();
            long end = t0 + (long) (seconds * 1e9);
            while (i < maxOps && (i < n || System.nanoTime() < end)) {
                clients.get((int) (i % n)).getData(path, false, null);
                i++;
            }
            r = new double[] {i, (System.nanoTime() - t0) / 1e9, (cpuNanos() - cpu0) / 1e9};
        }
        for (ZooKeeper zk : clients) zk.close();
        first.close();
        return json("rss_kib", rss / (double) n / 1024, "open_ms", openS / n * 1e3, "ops_per_s", r[0] / r[1],
                "cpu_us_per_op", r[2] / r[0] * 1e6, "sessions", n);
    }

    /** Scale: getChildren of a node with `arg` children: wall time and process CPU per call. */
    static String children() throws Exception {
        int n = iparam("arg");
        String node = path + "/children-" + n;
        ZooKeeper zk = connect();
        int calls = iparam("calls");
        long end = deadlineAfter(warm());
        for (int i = 0; i < calls && System.nanoTime() < end; i++) zk.getChildren(node, false);
        long[] lat = new long[calls];
        int k = 0, count = 0;
        long cpu0 = cpuNanos();
        end = deadlineAfter(param("measure"));
        while (k < calls && (k < 3 || System.nanoTime() < end)) {
            long t = System.nanoTime();
            count = zk.getChildren(node, false).size();
            lat[k++] = System.nanoTime() - t;
        }
        long cpu = cpuNanos() - cpu0;
        zk.close();
        if (count != n) throw new IllegalStateException(node + " has " + count + " children, expected " + n);
        return json("ms_per_call", percentiles(lat, k, 1e-6)[0], "cpu_ms_per_call", cpu / 1e6 / k, "calls", k);
    }

    // ------------------------------------------------------------------ memory

    static long heapUsed() throws Exception {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    static long rss() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
        return 0;
    }

    static String memSession() throws Exception {
        int n = iparam("idle_sessions");
        ZooKeeper first = connect();  // one-time costs (class loading) go here
        List<ZooKeeper> clients = new ArrayList<>();
        long heap0 = heapUsed(), rss0 = rss();
        for (int i = 0; i < n; i++) clients.add(connect());
        Thread.sleep(300);
        long heap = heapUsed() - heap0, rss = rss() - rss0;
        for (ZooKeeper zk : clients) zk.close();
        first.close();
        return json("rss_kib", rss / (double) n / 1024, "heap_kib", heap / (double) n / 1024, "n", n);
    }

    static String memWaiter() throws Exception {
        int n = iparam("mem_waiters");
        CuratorFramework holderCf = curator(), cf = curator();
        String lockPath = path + "/" + unique("curator-mem");
        InterProcessMutex holder = new InterProcessMutex(holderCf, lockPath);
        holder.acquire();
        List<Thread> threads = new ArrayList<>();
        Runnable queueOne = () -> {
            InterProcessMutex m = new InterProcessMutex(cf, lockPath);
            Thread t = new Thread(() -> {
                try {
                    if (m.acquire(iparam("timeout"), TimeUnit.SECONDS)) m.release();
                } catch (Exception e) {
                    // the session closed under it
                }
            });
            t.setDaemon(true);
            t.start();
            threads.add(t);
        };
        queueOne.run();  // one-time costs
        long limit = deadlineAfter(param("timeout"));
        while (holderCf.getChildren().forPath(lockPath).size() < 2) {
            if (System.nanoTime() > limit) throw new IllegalStateException("waiter did not queue");
            Thread.sleep(10);
        }
        long heap0 = heapUsed(), rss0 = rss();
        long watches = serverWatchCount() + n - 1;
        for (int i = 0; i < n; i++) queueOne.run();
        while (holderCf.getChildren().forPath(lockPath).size() < n + 2 || serverWatchCount() < watches) {
            if (System.nanoTime() > limit) throw new IllegalStateException("waiters did not queue");
            Thread.sleep(10);
        }
        Thread.sleep(200);
        long heap = heapUsed() - heap0, rss = rss() - rss0;
        cf.close();
        holder.release();
        holderCf.close();
        return json("rss_kib", rss / (double) n / 1024, "heap_kib", heap / (double) n / 1024, "n", n);
    }

    public static void main(String[] args) throws Exception {
        String metric = args[0];
        hosts = args[1];
        path = args[2];
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], Double.parseDouble(kv[1]));
        }
        String out;
        switch (metric) {
            case "seq": out = seq(); break;
            case "pipelined": out = pipelined(); break;
            case "create_delete": out = createDelete(); break;
            case "lock_cycle": out = lockCycle(); break;
            case "contended": out = contended(); break;
            case "handoff": out = handoff(); break;
            case "herd": out = herd(); break;
            case "mem_session": out = memSession(); break;
            case "mem_waiter": out = memWaiter(); break;
            case "waiters": out = waiters(); break;
            case "sessions": out = sessions(); break;
            case "children": out = children(); break;
            default: throw new IllegalArgumentException(metric);
        }
        System.out.println("RESULT " + out);
        System.out.flush();
        System.exit(0);
    }
}
