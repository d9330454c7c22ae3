// grpc-js against sluiced's gRPC API, for grpc_js_test.cc: prints one line per probe,
// "<probe> <grpc status code> <detail>", and exits 0 once every probe has answered.
//
//   node client.js PORT PROTO_DIR HEALTH_PROTO   (with @grpc/grpc-js and @grpc/proto-loader)
'use strict';
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const [port, protoDir, healthProto] = process.argv.slice(2);
const options = {keepCase: false, enums: String, longs: String, defaults: true};
const rls = grpc.loadPackageDefinition(
    loader.loadSync('envoy/service/ratelimit/v3/rls.proto', {...options, includeDirs: [protoDir]}));
const health = grpc.loadPackageDefinition(loader.loadSync(healthProto, options));
const target = `127.0.0.1:${port}`;
const insecure = grpc.credentials.createInsecure();
const client = new rls.envoy.service.ratelimit.v3.RateLimitService(target, insecure);
const checker = new health.grpc.health.v1.Health(target, insecure);
const deadline = () => Date.now() + 10000;

function request(ip) {
  return {domain: 'edge', descriptors: [{entries: [{key: 'remote_address', value: ip}]}]};
}

// Settles with [code, detail]: the overall code for a decision, the status for health, the
// error's details otherwise.
function settle(resolve) {
  return (err, res) => {
    if (err) return resolve([err.code, JSON.stringify(err.details)]);
    resolve([0, res && (res.overallCode || res.status) || 'empty']);
  };
}
const decide = (ip) => new Promise(
    (resolve) => client.ShouldRateLimit(request(ip), {deadline: deadline()}, settle(resolve)));
const raw = (path, bytes) => new Promise(
    (resolve) => client.makeUnaryRequest(path, (x) => x, (x) => x, bytes, {deadline: deadline()},
                                         settle(resolve)));
const check = (service) => new Promise(
    (resolve) => checker.Check({service}, {deadline: deadline()}, settle(resolve)));

async function main() {
  const probes = [];
  probes.push(['first', await decide('10.0.0.1')]);
  probes.push(['second', await decide('10.0.0.1')]);
  probes.push(['third', await decide('10.0.0.1')]);
  probes.push(['garbage', await raw('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
                                    Buffer.from([0xff, 0xff, 0xff, 0xff, 0x20]))]);
  probes.push(['unknown', await raw('/envoy.service.ratelimit.v3.RateLimitService/Nothing',
                                    Buffer.alloc(0))]);
  probes.push(['health', await check('')]);
  probes.push(['health_ratelimit', await check('ratelimit')]);
  probes.push(['health_unknown', await check('nothing')]);
  // Many calls at once on one connection, each on its own key: every one OK.
  const many = await Promise.all([...Array(100).keys()].map((i) => decide(`10.1.0.${i}`)));
  const fine = many.filter(([code, overall]) => code === 0 && overall === 'OK').length;
  probes.push(['concurrent_ok', [0, fine]]);
  for (const [name, [code, detail]] of probes) console.log(`${name} ${code} ${detail}`);
  client.close();
  checker.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
