// @grpc/grpc-js with @grpc/proto-loader against cellgate's grpc-port
// (tests/integration/test_grpc.py): ShouldRateLimit for each request given,
// then the health check; prints one JSON line with every answer.
//   node grpc.mjs <port> <repo protocol dir> '<JSON list of RateLimitRequest>'
import grpc from "@grpc/grpc-js";
import loader from "@grpc/proto-loader";

const [port, protoDir, requests] = process.argv.slice(2);
const options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };
const rls = grpc.loadPackageDefinition(
  loader.loadSync(`${protoDir}/rls.proto`, options)).envoy.service.ratelimit.v3;
const health = grpc.loadPackageDefinition(
  loader.loadSync(`${protoDir}/health.proto`, options)).grpc.health.v1;
const target = `127.0.0.1:${port}`;
const client = new rls.RateLimitService(target, grpc.credentials.createInsecure());
const checker = new health.Health(target, grpc.credentials.createInsecure());

function call(method, stub, request) {
  return new Promise((resolve) => {
    stub[method](request, { deadline: Date.now() + 5000 }, (err, reply) =>
      resolve(err ? { error: grpc.status[err.code], details: err.details } : reply));
  });
}

const answers = [];
for (const request of JSON.parse(requests)) {
  answers.push(await call("ShouldRateLimit", client, request));
}
const serving = await call("Check", checker, { service: "" });
console.log(JSON.stringify({ answers, health: serving }));
client.close();
checker.close();
