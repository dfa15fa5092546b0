/** `hloserve --help`. docs/cli.md quotes it verbatim and a test keeps the two equal. */
export const USAGE = `usage: hloserve <command> [options]

commands:
  serve [--config FILE] [--model-repo DIR] [--worker NAME]
              serve models over KServe V2 (gRPC, HTTP), with metrics and the console
  gateway --worker NAME=GRPC,HTTP[,METRICS[,CONSOLE]] ... [gateway options]
              the gateway alone, in front of workers on other hosts (docs/gateway.md);
              --state-url URL [--fleet NAME] keeps its placement in the operations store
  check PATH  validate a bundle directory, or every bundle of a model repository,
              and print each model's inputs and outputs or its errors
  version     print the versions of hloserve, Node.js and the pinned CPU plugin
  help        print this text (also --help, -h)

serve options:
  --config FILE     node.yaml (see docs/configuration.md); HLOSERVE_* variables override it
  --model-repo DIR  serve this model repository with default settings (no node.yaml)
  --worker NAME     which worker of node.yaml to run (default: the first)
  --workers N|auto  run N workers (auto: one per NVIDIA GPU) behind the gateway (docs/gateway.md)
  --routing MODE    gateway routing: round_robin, least_outstanding, lpt_packing
  --base-port P     first port of the workers behind the gateway (default 8100)
  --replicas m=n,.. replicas per model under lpt_packing
  --spares N        warm spare workers that take a failed worker's place

exit status: 0 success, 1 failure (check: a bundle is invalid), 2 usage error`;
