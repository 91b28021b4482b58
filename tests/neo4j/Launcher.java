/*
 * A real Neo4j Community server for the test suite, embedded in one JVM, reachable over Bolt.
 *
 * Run in source-file mode (no compile step), with the jars tests/neo4j/pom.xml resolves:
 *
 *     java -Xmx1g -cp <classpath> Launcher.java <home-dir> <port>
 *
 * Starts a DatabaseManagementService on <home-dir> with Bolt on 127.0.0.1:<port>, no auth, no HTTP, a small page
 * cache and small transaction logs, waits until the default database is available, then prints exactly one line
 *
 *     AGENTX-NEO4J-READY bolt://127.0.0.1:<port> <neo4j version>
 *
 * It shuts the server down cleanly on SIGTERM/SIGINT (a shutdown hook) and when its stdin reaches EOF, so a parent
 * that dies (even by SIGKILL) never leaves an orphan server behind. Exit status: 0 after a clean shutdown, 1 when
 * the server could not start (the stack trace goes to stderr).
 *
 * It compiles against Neo4j 5.26 (Java 17+) and 2025.x/2026.x (Java 21+): the public settings used here have the
 * same names and types in both; the settings that differ (an internal one, two that 5.26 lacks) are set through
 * reflection by setIfPresent. See README.md.
 */

import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.kernel.internal.Version;

/** Runs one embedded Neo4j with Bolt until SIGTERM or stdin EOF (see the comment at the top of this file). */
public class Launcher {
    /** The first word of the one line printed on stdout once the server accepts Bolt connections. */
    static final String READY = "AGENTX-NEO4J-READY";
    /** The running server, for the shutdown hook; null before it is built and after it is shut down. */
    static volatile DatabaseManagementService service;

    /** {@code <home-dir> <port>}: start, print the ready line, then serve until SIGTERM or stdin EOF. */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -cp <neo4j classpath> Launcher.java <home-dir> <port>");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = Integer.parseInt(args[1]);

        // Watch stdin from the start: a parent that dies while we are still starting must not leave us running.
        Thread stdinWatch = new Thread(Launcher::exitOnStdinEof, "agentx-stdin-eof");
        stdinWatch.setDaemon(true);
        stdinWatch.start();

        // Registered before the server exists so a SIGTERM during start-up still stops whatever was built.
        Runtime.getRuntime().addShutdownHook(new Thread(Launcher::shutdown, "agentx-neo4j-shutdown"));
        DatabaseManagementService built;
        try {
            DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home);
            // Netty waits this quiet period twice on shutdown (5 s each by default): 10 s per stop for nothing here.
            // A Setting<Integer> (seconds) in 5.26, a Setting<Duration> in 2025+.
            setIfPresent(builder, "org.neo4j.configuration.GraphDatabaseInternalSettings",
                    "netty_server_shutdown_quiet_period", d -> d instanceof Integer ? (Object) 0 : Duration.ZERO);
            // Newer versions broadcast on the LAN for Fleet Manager discovery (server.fleet_discovery.enabled, absent
            // in 5.26): a test server talks to nobody.
            setIfPresent(builder, "org.neo4j.configuration.connectors.BoltConnector", "enable_discovery", d -> false);
            // Neo4j 2026.02+ ships a neo4j.conf with db.query.default_language=CYPHER_25, so a fresh real server
            // speaks Cypher 25 by default; embedded keeps the setting's own default (Cypher 5). Do as the server.
            if (calendarVersion(Version.getNeo4jVersion()) >= 2026_02) {
                setIfPresent(builder, "org.neo4j.configuration.GraphDatabaseSettings", "default_language",
                        Launcher::cypher25);
            }
            built = builder
                    .setConfig(BoltConnector.enabled, true)
                    .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                    .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                    .setConfig(HttpConnector.enabled, false)
                    .setConfig(HttpsConnector.enabled, false)
                    .setConfig(GraphDatabaseSettings.auth_enabled, false)
                    .setConfig(GraphDatabaseSettings.pagecache_memory, pageCacheMegabytes() * 1024 * 1024)
                    .setConfig(GraphDatabaseSettings.keep_logical_logs, "false") // keep only the latest tx log
                    .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, 16L * 1024 * 1024)
                    .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                    .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofMinutes(5))
                    .build();
            service = built;
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
            return;
        }

        GraphDatabaseService db = built.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        while (!db.isAvailable(1000)) {
            // isAvailable waits up to the given milliseconds; the Python side owns the overall timeout.
        }
        System.out.println(READY + " bolt://127.0.0.1:" + port + " " + Version.getNeo4jVersion());
        System.out.flush();
        Thread.currentThread().join(); // until SIGTERM or stdin EOF calls System.exit
    }

    /**
     * Sets a setting that only some Neo4j versions have, or that changed type between them: the value is computed
     * from the setting's default (whose type tells which flavour this version has). A missing class or field is
     * reported on stderr and skipped.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setIfPresent(DatabaseManagementServiceBuilder builder, String className, String field,
                             UnaryOperator<Object> valueFromDefault) {
        try {
            Setting<Object> setting = (Setting<Object>) Class.forName(className).getField(field).get(null);
            builder.setConfig(setting, valueFromDefault.apply(setting.defaultValue()));
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            System.err.println("agentx launcher: " + className + "." + field + " is not in this Neo4j, skipped");
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("agentx launcher: not setting " + className + "." + field + ": " + e);
        }
    }

    /** The Cypher25 constant of the enum that the default_language setting's default (Cypher5) belongs to. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object cypher25(Object cypher5) {
        return Enum.valueOf(((Enum) cypher5).getDeclaringClass(), "Cypher25");
    }

    /** 2026.08.1 -> 202608; 0 for the 5.x versions. */
    static int calendarVersion(String version) {
        Matcher m = Pattern.compile("^(\\d{4})\\.(\\d{2})").matcher(version);
        return m.find() ? Integer.parseInt(m.group(1)) * 100 + Integer.parseInt(m.group(2)) : 0;
    }

    /** Stops the server once (the shutdown hook); a no-op when it was never built. */
    static synchronized void shutdown() {
        DatabaseManagementService s = service;
        service = null;
        if (s != null) {
            s.shutdown();
        }
    }

    /** Reads (and discards) stdin until EOF or an error, then exits the JVM, which runs the shutdown hook. */
    static void exitOnStdinEof() {
        byte[] buffer = new byte[256];
        try {
            while (System.in.read(buffer) != -1) {
                // Nothing is expected on stdin; it only tells us the parent is alive.
            }
        } catch (Exception ignored) {
            // A broken stdin means the same as EOF.
        }
        System.exit(0);
    }

    /** The page cache: 256 MiB, or the megabytes AGENTX_TEST_NEO4J_PAGECACHE_MB names (bench scale at 1M turns). */
    static long pageCacheMegabytes() {
        String value = System.getenv("AGENTX_TEST_NEO4J_PAGECACHE_MB");
        if (value == null || value.isBlank()) {
            return 256L;
        }
        long megabytes = Long.parseLong(value.strip());
        if (megabytes < 16) {
            throw new IllegalArgumentException("AGENTX_TEST_NEO4J_PAGECACHE_MB must be at least 16, got " + value);
        }
        return megabytes;
    }
}
