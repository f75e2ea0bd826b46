/*
 * Starts Kroxylicious (io.kroxylicious:kroxylicious-runtime) with the configuration file named
 * by its one argument, as kroxylicious-app's main does: that artifact, which holds the main
 * class, is not on Maven Central, only the runtime is. Nothing here handles Kafka's protocol.
 */
package io.isthmus.gateway;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;

public final class Gateway {
    private Gateway() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !Files.isReadable(Path.of(args[0]))) {
            System.err.println("Usage: Gateway CONFIG.yaml (a Kroxylicious configuration file that exists)");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config;
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            config = parser.parseConfiguration(in);
        }
        KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures());
        // SIGTERM closes the listeners and the clients' connections at once, so a restart
        // with another route can bind the same ports straight after.
        Runtime.getRuntime().addShutdownHook(new Thread(proxy::shutdown, "gateway-shutdown"));
        proxy.startup();
        proxy.block();
    }
}
