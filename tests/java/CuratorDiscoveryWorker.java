// curator-x-discovery for the interoperability tests (tests/interop/test_discovery_peers.py).
//
// CuratorDiscoveryWorker <connect> <basePath>
//   Prints READY once connected, then reads commands from stdin, one a line, and answers each with one
//   line (ERR <exception> on failure).  Instances carry a Map payload ({"zone": <zone>}).
//     register <service> <id> <address> <port> <zone>   registers a DYNAMIC instance; answers OK
//     update <service> <id> <address> <port> <zone>     updateService; answers OK
//     unregister <service> <id>                         unregisterService; answers OK
//     names                                             NAMES <name> ... (sorted)
//     query <service>                                   INSTANCES <id>@<address>:<port>/<zone> ... (sorted)
//     cache <service>                                   the same from a ServiceCache started on first use
//     provider <service> <strategy>                     one instance from a ServiceProvider (round-robin,
//                                                       random): INSTANCE <id> or NONE
//     quit                                              exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.strategies.RandomStrategy;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;

public class CuratorDiscoveryWorker {
    static final Map<String, ServiceCache<Map>> caches = new HashMap<>();
    static final Map<String, ServiceProvider<Map>> providers = new HashMap<>();

    static ServiceInstance<Map> instance(String[] w) throws Exception {
        Map<String, String> payload = new HashMap<>();
        payload.put("zone", w[5]);
        return ServiceInstance.<Map>builder().name(w[1]).id(w[2]).address(w[3]).port(Integer.parseInt(w[4])).payload(payload).build();
    }

    static String list(Collection<ServiceInstance<Map>> instances) {
        List<String> out = new ArrayList<>();
        for (ServiceInstance<Map> i : instances) {
            Object zone = i.getPayload() == null ? null : i.getPayload().get("zone");
            out.add(i.getId() + "@" + i.getAddress() + ":" + i.getPort() + "/" + zone);
        }
        Collections.sort(out);
        return "INSTANCES" + (out.isEmpty() ? "" : " " + String.join(" ", out));
    }

    static String run(CuratorFramework client, ServiceDiscovery<Map> discovery, String[] w) throws Exception {
        switch (w[0]) {
            case "register":
                discovery.registerService(instance(w));
                return "OK";
            case "update":
                discovery.updateService(instance(w));
                return "OK";
            case "unregister":
                discovery.unregisterService(discovery.queryForInstance(w[1], w[2]));
                return "OK";
            case "names": {
                List<String> names = new ArrayList<>(discovery.queryForNames());
                Collections.sort(names);
                return "NAMES" + (names.isEmpty() ? "" : " " + String.join(" ", names));
            }
            case "query":
                return list(discovery.queryForInstances(w[1]));
            case "cache": {
                ServiceCache<Map> cache = caches.get(w[1]);
                if (cache == null) {
                    cache = discovery.serviceCacheBuilder().name(w[1]).build();
                    cache.start();
                    caches.put(w[1], cache);
                }
                return list(cache.getInstances());
            }
            case "provider": {
                String key = w[1] + " " + w[2];
                ServiceProvider<Map> provider = providers.get(key);
                if (provider == null) {
                    provider = discovery.serviceProviderBuilder().serviceName(w[1])
                        .providerStrategy(w[2].equals("random") ? new RandomStrategy<>() : new RoundRobinStrategy<>()).build();
                    provider.start();
                    providers.put(key, provider);
                }
                ServiceInstance<Map> i = provider.getInstance();
                return i == null ? "NONE" : "INSTANCE " + i.getId();
            }
            default:
                return "ERR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new ExponentialBackoffRetry(100, 5));
        client.start();
        client.blockUntilConnected();
        ServiceDiscovery<Map> discovery = ServiceDiscoveryBuilder.builder(Map.class).client(client).basePath(args[1]).build();
        discovery.start();
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
                answer = run(client, discovery, w);
            } catch (Exception e) {
                answer = "ERR " + e.toString().replace('\n', ' ');
            }
            System.out.println(answer);
        }
        for (ServiceProvider<Map> p : providers.values()) {
            p.close();
        }
        for (ServiceCache<Map> c : caches.values()) {
            c.close();
        }
        discovery.close();
        client.close();
    }
}
