// grpc-js against sluiced's Rate Limit Quota Service, for rlqs_js_test.cc: two Envoy-like
// streams on domain `quota`, each reporting several buckets with time_elapsed 0 first, as Envoy's
// rate_limit_quota filter does. Prints one line per bucket action,
// "<client> <bucket> <action> <rate> <ttl_seconds>", then "done", and exits 0.
//
//   node rlqs_client.js PORT PROTO_DIR   (with @grpc/grpc-js and @grpc/proto-loader)
'use strict';
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const [port, protoDir] = process.argv.slice(2);
const options = {keepCase: false, enums: String, longs: String, defaults: false, oneofs: true};
const pkg = grpc.loadPackageDefinition(loader.loadSync(
    'envoy/service/rate_limit_quota/v3/rlqs.proto', {...options, includeDirs: [protoDir]}));
const Service = pkg.envoy.service.rate_limit_quota.v3.RateLimitQuotaService;
const client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure());

function usage(bucket, allowed, seconds) {
  return {bucketId: {bucket}, timeElapsed: {seconds}, numRequestsAllowed: allowed,
          numRequestsDenied: 0};
}

function describe(name, action) {
  const bucket = Object.entries(action.bucketId.bucket).map(([k, v]) => `${k}=${v}`).join(',');
  if (action.abandonAction) return `${name} ${bucket} abandon - -`;
  const assignment = action.quotaAssignmentAction;
  const strategy = assignment.rateLimitStrategy;
  const ttl = assignment.assignmentTimeToLive.seconds;
  if (strategy.tokenBucket) {
    return `${name} ${bucket} token_bucket ${strategy.tokenBucket.tokensPerFill.value} ${ttl}`;
  }
  return `${name} ${bucket} ${strategy.blanketRule || 'ALLOW_ALL'} - ${ttl}`;
}

// Opens a stream as Envoy `name`, sends `reports` one after the other (each after the previous
// answer) and resolves once every one is answered.
function stream(name, reports) {
  return new Promise((resolve, reject) => {
    const metadata = new grpc.Metadata();
    metadata.set('x-sluice-rlqs-client', name);
    const call = client.StreamRateLimitQuotas(metadata, {deadline: Date.now() + 20000});
    let next = 0;
    call.on('data', (response) => {
      for (const action of response.bucketAction) console.log(describe(name, action));
      if (++next < reports.length) {
        call.write(reports[next]);
      } else {
        call.end();
      }
    });
    call.on('error', (err) => reject(err));
    call.on('end', () => resolve());
    call.write(reports[0]);
  });
}

async function main() {
  const api = {name: 'api'};
  const first = {domain: 'quota', bucketQuotaUsages: [usage(api, 0, 0), usage({name: 'nope'}, 0, 0),
                                                       usage({name: 'free'}, 0, 0)]};
  const unknownDomain = {domain: 'other', bucketQuotaUsages: [usage(api, 0, 0)]};
  await stream('js-a', [first, unknownDomain]);
  // js-a's grant of the whole limit is live: js-b is told to deny until it shrinks.
  await stream('js-b', [first]);
  console.log('done');
}

main().catch((err) => {
  console.log(`error ${err.code} ${err.details}`);
  process.exit(1);
});
