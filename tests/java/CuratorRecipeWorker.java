// Curator's toolbox recipes for the interoperability tests (tests/interop/test_toolbox_curator.py).
//
// CuratorRecipeWorker <connect>
//   Prints READY once connected, then reads commands from stdin, one a line, and answers each with one
//   line (ERR <exception> on failure).  Text arguments have no spaces.
//     join <path> <id> <payload>   starts a GroupMember; answers OK
//     members <path>               the joined member's getCurrentMembers(): MEMBERS id=payload ... (sorted)
//     payload <path> <payload>     setThisData on the joined member; answers OK
//     leave <path>                 closes the joined member; answers OK
//     count-get <path>             SharedCount (seed 0) getCount: COUNT <n>
//     count-set <path> <n>         SharedCount setCount; answers OK
//     count-add <path> <n>         trySetCount in a loop until it succeeds: COUNT <new value>
//     long-add <path> <delta>      DistributedAtomicLong.add: LONG <pre> <post> (or FAILED)
//     long-get <path>              DistributedAtomicLong.get: LONG <value> <value>
//     int-add <path> <delta>       DistributedAtomicInteger.add: INT <pre> <post> (or FAILED)
//     barrier-set <path>           DistributedBarrier.setBarrier; answers OK
//     barrier-remove <path>        DistributedBarrier.removeBarrier; answers OK
//     barrier-wait <path> <millis> DistributedBarrier.waitOnBarrier: WAITED true|false
//     dbarrier-enter <path> <n> <ms>  DistributedDoubleBarrier(n).enter: ENTERED true|false
//     dbarrier-leave <path> <ms>      that barrier's leave: LEFT true|false
//     squeue-offer <path> <data>   SimpleDistributedQueue.offer; answers OK
//     squeue-poll <path>           SimpleDistributedQueue.poll: ITEM <data> or EMPTY
//     selector-start <path> <id>   starts a LeaderSelector (autoRequeue) that leads until stopped; OK
//     selector-leader <path>       LEADER true|false (hasLeadership)
//     selector-stop <path>         closes it; answers OK
//     pnode-start <path> <data>    starts an EPHEMERAL PersistentNode; answers OK once it exists
//     pnode-stop <path>            closes it; answers OK
//     ttlnode-start <path> <ms> <data>  starts a PersistentTtlNode; answers OK once it exists
//     ttlnode-stop <path>          closes it; answers OK
//     quit                         exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.CreateMode;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorRecipeWorker {
    static final Map<String, GroupMember> members = new HashMap<>();
    static final Map<String, SharedCount> counts = new HashMap<>();
    static final Map<String, DistributedDoubleBarrier> barriers = new HashMap<>();
    static final Map<String, LeaderSelector> selectors = new HashMap<>();
    static final Map<String, PersistentNode> pnodes = new HashMap<>();
    static final Map<String, PersistentTtlNode> ttlnodes = new HashMap<>();

    static SharedCount count(CuratorFramework client, String path) throws Exception {
        SharedCount c = counts.get(path);
        if (c == null) {
            c = new SharedCount(client, path, 0);
            c.start();
            counts.put(path, c);
        }
        return c;
    }

    static String run(CuratorFramework client, String[] w) throws Exception {
        switch (w[0]) {
            case "join": {
                GroupMember m = new GroupMember(client, w[1], w[2], w[3].getBytes(StandardCharsets.UTF_8));
                m.start();
                members.put(w[1], m);
                return "OK";
            }
            case "members": {
                StringBuilder out = new StringBuilder("MEMBERS");
                for (Map.Entry<String, byte[]> e : new TreeMap<>(members.get(w[1]).getCurrentMembers()).entrySet()) {
                    out.append(' ').append(e.getKey()).append('=').append(new String(e.getValue(), StandardCharsets.UTF_8));
                }
                return out.toString();
            }
            case "payload":
                members.get(w[1]).setThisData(w[2].getBytes(StandardCharsets.UTF_8));
                return "OK";
            case "leave":
                members.remove(w[1]).close();
                return "OK";
            case "count-get":
                return "COUNT " + count(client, w[1]).getCount();
            case "count-set":
                count(client, w[1]).setCount(Integer.parseInt(w[2]));
                return "OK";
            case "count-add": {
                SharedCount c = count(client, w[1]);
                while (true) {
                    VersionedValue<Integer> v = c.getVersionedValue();
                    int next = v.getValue() + Integer.parseInt(w[2]);
                    if (c.trySetCount(v, next)) {
                        return "COUNT " + next;
                    }
                }
            }
            case "long-add": {
                AtomicValue<Long> v = new DistributedAtomicLong(client, w[1], new RetryNTimes(1000, 1)).add(Long.parseLong(w[2]));
                return v.succeeded() ? "LONG " + v.preValue() + " " + v.postValue() : "FAILED";
            }
            case "long-get": {
                AtomicValue<Long> v = new DistributedAtomicLong(client, w[1], new RetryNTimes(1000, 1)).get();
                return "LONG " + v.preValue() + " " + v.postValue();
            }
            case "int-add": {
                AtomicValue<Integer> v = new DistributedAtomicInteger(client, w[1], new RetryNTimes(1000, 1)).add(Integer.parseInt(w[2]));
                return v.succeeded() ? "INT " + v.preValue() + " " + v.postValue() : "FAILED";
            }
            case "barrier-set":
                new DistributedBarrier(client, w[1]).setBarrier();
                return "OK";
            case "barrier-remove":
                new DistributedBarrier(client, w[1]).removeBarrier();
                return "OK";
            case "barrier-wait":
                return "WAITED " + new DistributedBarrier(client, w[1]).waitOnBarrier(Long.parseLong(w[2]), TimeUnit.MILLISECONDS);
            case "dbarrier-enter": {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, w[1], Integer.parseInt(w[2]));
                barriers.put(w[1], b);
                return "ENTERED " + b.enter(Long.parseLong(w[3]), TimeUnit.MILLISECONDS);
            }
            case "dbarrier-leave":
                return "LEFT " + barriers.remove(w[1]).leave(Long.parseLong(w[2]), TimeUnit.MILLISECONDS);
            case "squeue-offer":
                new SimpleDistributedQueue(client, w[1]).offer(w[2].getBytes(StandardCharsets.UTF_8));
                return "OK";
            case "squeue-poll": {
                byte[] item = new SimpleDistributedQueue(client, w[1]).poll();
                return item == null ? "EMPTY" : "ITEM " + new String(item, StandardCharsets.UTF_8);
            }
            case "selector-start": {
                LeaderSelector s = new LeaderSelector(client, w[1], new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) throws Exception {
                        Thread.sleep(Long.MAX_VALUE);
                    }
                });
                s.setId(w[2]);
                s.autoRequeue();
                s.start();
                selectors.put(w[1], s);
                return "OK";
            }
            case "selector-leader":
                return "LEADER " + selectors.get(w[1]).hasLeadership();
            case "selector-stop":
                selectors.remove(w[1]).close();
                return "OK";
            case "pnode-start": {
                PersistentNode n = new PersistentNode(client, CreateMode.EPHEMERAL, false, w[1], w[2].getBytes(StandardCharsets.UTF_8));
                n.start();
                pnodes.put(w[1], n);
                return "OK " + n.waitForInitialCreate(20, TimeUnit.SECONDS);
            }
            case "pnode-stop":
                pnodes.remove(w[1]).close();
                return "OK";
            case "ttlnode-start": {
                PersistentTtlNode n = new PersistentTtlNode(client, w[1], Long.parseLong(w[2]), w[3].getBytes(StandardCharsets.UTF_8));
                n.start();
                ttlnodes.put(w[1], n);
                return "OK " + n.waitForInitialCreate(20, TimeUnit.SECONDS);
            }
            case "ttlnode-stop":
                ttlnodes.remove(w[1]).close();
                return "OK";
            default:
                return "ERR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new ExponentialBackoffRetry(100, 5));
        client.start();
        client.blockUntilConnected();
        System.out.println("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            if (w[0].equals("quit")) {
                break;
            }
            String answer;
            try {
                answer = run(client, w);
            } catch (Exception e) {
                answer = "ERR " + e.toString().replace('\n', ' ');
            }
            System.out.println(answer);
        }
        for (GroupMember m : members.values()) {
            m.close();
        }
        for (SharedCount c : counts.values()) {
            c.close();
        }
        client.close();
    }
}
