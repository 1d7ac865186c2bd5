// deploy/k8s (decisions §28): `kubectl kustomize` renders the base and every overlay, and every rendered object is
// checked offline against the Kubernetes API's schemas from the npm package kubernetes-models, twice: its JSON
// Schema validators (types, formats, required fields, enums) and its TypeScript declarations under the compiler's
// excess-property check (`satisfies`), which refuses any field the API does not define. Then what decisions §28 asks of
// the Deployment itself. kubectl (with its built-in kustomize) comes from the machine (KUBECTL names another); without
// it these tests are skipped, and fail with CI=true.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";

const HERE = import.meta.dir;
const ROOT = join(HERE, "..", "..");
const KUBECTL = process.env.KUBECTL?.trim() || Bun.which("kubectl");
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
const TARGETS = ["base", ...readdirSync(join(HERE, "overlays")).map((name) => join("overlays", name))];

type K8sObject = { apiVersion: string; kind: string; metadata?: { name?: string; namespace?: string }; [key: string]: unknown };

/** `kubectl kustomize <dir>` parsed: every object it prints. */
function render(target: string): K8sObject[] {
  const run = Bun.spawnSync([KUBECTL!, "kustomize", join(HERE, target)], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`kubectl kustomize ${target} failed: ${run.stderr.toString()}`);
  const parsed = Bun.YAML.parse(run.stdout.toString()) as K8sObject | K8sObject[];
  return (Array.isArray(parsed) ? parsed : [parsed]).filter((doc) => doc !== null).map(unwrapSecretData);
}

/**
 * kustomize wraps a long Secret value's base64 over several lines; the API server's decoder (Go's base64) skips line
 * breaks, the schema's `byte` format does not. Joined here as the server reads them.
 */
function unwrapSecretData(object: K8sObject): K8sObject {
  if (object.kind !== "Secret" || typeof object.data !== "object" || object.data === null) return object;
  const data = Object.fromEntries(Object.entries(object.data as Record<string, string>).map(([k, v]) => [k, v.replace(/[\r\n]/g, "")]));
  return { ...object, data };
}

/** The module of kubernetes-models that models `apiVersion`/`kind` (`v1` → `v1/ConfigMap`, `apps/v1` → `apps/v1/Deployment`). */
function modelPath(object: K8sObject): string {
  return `kubernetes-models/${object.apiVersion}/${object.kind}`;
}

/** The JSON Schema check: the errors the model's validator reports, none when valid. */
async function schemaErrors(object: K8sObject): Promise<string[]> {
  const module = (await import(modelPath(object))) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = module[object.kind];
  if (Model === undefined) return [`no model for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
}

/**
 * The strict check: one TypeScript source where each object literal `satisfies` its kind's declared interface,
 * compiled in memory; every diagnostic (an unknown field, a wrong type, a missing required field) is returned.
 */
function strictErrors(objects: readonly K8sObject[]): string[] {
  const file = join(HERE, "__rendered_objects__.ts");
  const lines = objects.map((object, i) => `import type { I${object.kind} as T${i} } from ${JSON.stringify(modelPath(object))};`);
  objects.forEach((object, i) => lines.push(`export const o${i} = ${JSON.stringify(object, null, 1)} satisfies T${i};`));
  const source = lines.join("\n");
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram({ rootNames: [file], options, host });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const near = where === undefined ? "" : ` (line ${where.line + 1}: ${source.split("\n")[where.line]?.trim()})`;
    return `${ts.flattenDiagnosticMessageText(d.messageText, "\n")}${near}`;
  });
}

function named(objects: readonly K8sObject[], kind: string, name: string): Record<string, any> {
  const found = objects.find((o) => o.kind === kind && (o.metadata?.name === name || o.metadata?.name?.startsWith(`${name}-`)));
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}

const skipReason = KUBECTL === null || KUBECTL === undefined ? "kubectl is not installed" : undefined;
if (skipReason !== undefined && IN_CI) {
  test("kubectl renders the manifests (CI=true: required)", () => {
    throw new Error(`CI=true but ${skipReason}: the Kubernetes manifests must be rendered and validated in CI`);
  });
}

describe.skipIf(skipReason !== undefined)(`deploy/k8s${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  for (const target of TARGETS) {
    test(`kubectl kustomize ${target}: every object valid against the API's schemas, unknown fields refused`, async () => {
      const objects = render(target);
      // Deployment, Service, PodDisruptionBudget and two ConfigMaps (the Secrets are the overlay's or the cluster's).
      expect(objects.length).toBeGreaterThanOrEqual(5);
      for (const object of objects) {
        expect({ object: `${object.kind} ${object.metadata?.name}`, errors: await schemaErrors(object) }).toEqual({
          object: `${object.kind} ${object.metadata?.name}`,
          errors: [],
        });
      }
      expect(strictErrors(objects)).toEqual([]);
    }, 60_000);
  }

  test("the checks refuse what the API refuses: an unknown field, a wrong type", async () => {
    const [deployment] = render("base").filter((o) => o.kind === "Deployment") as Record<string, any>[];
    const typo = structuredClone(deployment!);
    typo.spec.template.spec.containers[0].readinessProbe.httpGet.paht = "/readyz";
    expect(strictErrors([typo as K8sObject]).join("\n")).toContain("paht");
    const wrong = structuredClone(deployment!);
    wrong.spec.replicas = "3";
    expect((await schemaErrors(wrong as K8sObject)).join("\n")).toContain("replicas");
  }, 60_000);

  test("the Deployment: 3 replicas, probes, resources, non-root 65532 on a read-only root, settings from Secrets", () => {
    for (const target of TARGETS) {
      const objects = render(target);
      const deployment = named(objects, "Deployment", "ats");
      const pod = deployment.spec.template.spec;
      const [container] = pod.containers;
      expect(deployment.spec.replicas).toBe(3);
      expect(container.livenessProbe.httpGet.path).toBe("/healthz");
      expect(container.readinessProbe.httpGet.path).toBe("/readyz");
      expect(container.startupProbe.httpGet.path).toBe("/healthz");
      expect(container.resources.requests).toBeDefined();
      expect(container.resources.limits.memory).toBeDefined();
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
      expect(container.securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      // §15's drain fits in the grace period: the preStop pause, SHUTDOWN_GRACE_MS (the delay in it), and the 4 s after
      // it at most that the process takes to end what follows the drain.
      const env = (name: string) => Number(container.env.find((e: { name: string }) => e.name === name).value);
      const graceMs = env("SHUTDOWN_GRACE_MS");
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(container.lifecycle.preStop.sleep.seconds * 1000 + graceMs + 4_000);
      // A lame duck after SIGTERM: the connections kept to the pod close after their next answer (Connection: close)
      // before the drain closes them; it is part of the grace, with time left for the requests under way.
      expect(env("SHUTDOWN_DELAY_MS")).toBeGreaterThan(0);
      expect(env("SHUTDOWN_DELAY_MS")).toBeLessThanOrEqual(graceMs / 2);
      // Every ConfigMap it names is rendered (kustomize's hashed names). Its three Secrets are the overlay's (rendered,
      // hashed, the references renamed) or, from the base alone, named as they are for the cluster's secret store to
      // make: never a placeholder that would be applied over the cluster's, or leave it unused under a hashed name.
      const configMaps = [...container.envFrom.map((e: any) => e.configMapRef?.name), ...pod.volumes.map((v: any) => v.configMap?.name)].filter(Boolean);
      for (const name of configMaps) expect(objects.some((o) => o.metadata?.name === name)).toBe(true);
      const secrets = [...container.envFrom.map((e: any) => e.secretRef?.name), ...pod.volumes.map((v: any) => v.secret?.secretName)].filter(Boolean);
      if (target === "base") {
        expect(secrets.sort()).toEqual(["ats-database", "ats-signer", "ats-signer-files"]);
        expect(objects.filter((o) => o.kind === "Secret")).toEqual([]);
      } else {
        for (const name of secrets) expect(objects.some((o) => o.kind === "Secret" && o.metadata?.name === name)).toBe(true);
        expect(named(objects, "Secret", "ats-database").data.DATABASE_URL).toBeDefined();
        expect(named(objects, "Secret", "ats-signer").data.DELEGATE_SIGNER).toBeDefined();
      }
      expect(named(objects, "ConfigMap", "ats-settings").data.STORAGE).toBe("postgres");
      expect(JSON.parse(named(objects, "ConfigMap", "ats-trust-anchors").data["trust-anchors.json"]).version).toBe(1);
      expect(named(objects, "PodDisruptionBudget", "ats").spec.minAvailable).toBe(2);
      // Unready pods may be evicted: a deployment-wide outage (every pod unready) must not block drains.
      expect(named(objects, "PodDisruptionBudget", "ats").spec.unhealthyPodEvictionPolicy).toBe("AlwaysAllow");
      expect(named(objects, "Service", "ats").spec.selector).toEqual(deployment.spec.selector.matchLabels);
    }
  }, 60_000);

  test("every container of the image runs the version package.json names, the tag `npm run image` builds", () => {
    const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
    for (const target of TARGETS) {
      const images = render(target)
        .filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet")
        .flatMap((o: any) => o.spec.template.spec.containers.map((c: { image: string }) => c.image))
        .filter((image: string) => /^ats(:|@|$)/.test(image));
      expect(images.length).toBeGreaterThan(0);
      expect({ target, images: [...new Set(images)] }).toEqual({ target, images: [`ats:${version}`] });
    }
  }, 60_000);

  test("overlays/devnet: the devnet's files are the compose file's, and its signer reads them where they are mounted", () => {
    const overlay = join(HERE, "overlays", "devnet");
    for (const name of ["trust-anchors.json", "delegate-keystore.json", "delegate-password.txt"]) {
      expect({ name, same: readFileSync(join(overlay, name), "utf8") === readFileSync(join(ROOT, "deploy", "devnet", name), "utf8") })
        .toEqual({ name, same: true });
    }
    const objects = render(relative(HERE, overlay));
    const signer = Buffer.from(named(objects, "Secret", "ats-signer").data.DELEGATE_SIGNER, "base64").toString();
    const deployment = named(objects, "Deployment", "ats");
    const mount = deployment.spec.template.spec.containers[0].volumeMounts.find((m: any) => m.name === "signer-files").mountPath;
    const files = Object.keys(named(objects, "Secret", "ats-signer-files").data);
    expect(signer).toBe(`keystore:${mount}/delegate-keystore.json?password-file=${mount}/delegate-password.txt`);
    expect(files.sort()).toEqual(["delegate-keystore.json", "delegate-password.txt"]);
    expect(dirname(`${mount}/x`)).toBe(mount);
  }, 60_000);
});
