/*
 * Kroxylicious's own port-per-node addressing, listening only where it advertises. In 0.12.0
 * a gateway's portIdentifiesNode has no bind address: its ports listen on every interface
 * whatever the bootstrapAddress says (seen with ss). This plugin (Kroxylicious's
 * ClusterNetworkAddressConfigProviderService, found through META-INF/services) takes the same
 * configuration and binds to the bootstrap address's host, so a gateway on 127.0.0.1 is
 * reachable from this machine only.
 */
package io.isthmus.gateway;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.kroxylicious.proxy.internal.clusternetworkaddressconfigprovider.RangeAwarePortPerNodeClusterNetworkAddressConfigProvider;
import io.kroxylicious.proxy.internal.clusternetworkaddressconfigprovider.RangeAwarePortPerNodeClusterNetworkAddressConfigProvider.RangeAwarePortPerNodeClusterNetworkAddressConfigProviderConfig;
import io.kroxylicious.proxy.plugin.Plugin;
import io.kroxylicious.proxy.service.ClusterNetworkAddressConfigProvider;
import io.kroxylicious.proxy.service.ClusterNetworkAddressConfigProviderService;
import io.kroxylicious.proxy.service.HostPort;

@Plugin(configType = RangeAwarePortPerNodeClusterNetworkAddressConfigProviderConfig.class)
public final class LoopbackPortPerNode
        implements ClusterNetworkAddressConfigProviderService<RangeAwarePortPerNodeClusterNetworkAddressConfigProviderConfig> {

    @Override
    public ClusterNetworkAddressConfigProvider build(RangeAwarePortPerNodeClusterNetworkAddressConfigProviderConfig config) {
        ClusterNetworkAddressConfigProvider ports = new RangeAwarePortPerNodeClusterNetworkAddressConfigProvider().build(config);
        String host = ports.getClusterBootstrapAddress().host();
        return new ClusterNetworkAddressConfigProvider() {
            @Override
            public HostPort getClusterBootstrapAddress() {
                return ports.getClusterBootstrapAddress();
            }

            @Override
            public HostPort getBrokerAddress(int nodeId) {
                return ports.getBrokerAddress(nodeId);
            }

            @Override
            public Optional<String> getBindAddress() {
                return Optional.of(host);
            }

            @Override
            public Set<Integer> getExclusivePorts() {
                return ports.getExclusivePorts();
            }

            @Override
            public Map<Integer, HostPort> discoveryAddressMap() {
                return ports.discoveryAddressMap();
            }
        };
    }
}
