// This node's standing in the service: whether it drains (after SIGTERM it takes no new work of its
// own) and, in a cluster, the registry where it publishes its capacity and finds the nodes with room.
import type { NodeDirectory, NodeEntry } from "../cluster/node-registry.ts";
import { ApiError } from "./errors.ts";

/** What a 503 asks a client (or a load balancer) to wait before trying this node again. */
export const RETRY_AFTER_S = 5;

/** A 503 with Retry-After: this node cannot take the work now; another node (or a later try) can. */
export const unavailable = (message: string) => new ApiError(503, message, null, "server_error", { "Retry-After": String(RETRY_AFTER_S) });

export class ServingNode {
  private isDraining = false;
  /** The cluster's registry, once this node listens and has joined it; null on one node. */
  directory: NodeDirectory | null = null;

  constructor(readonly clustered: boolean) {}

  get draining(): boolean {
    return this.isDraining;
  }

  startDraining(): void {
    this.isDraining = true;
    this.directory?.publish();
  }

  /** This node's capacity changed (a session slot taken or freed): the registry hears it now. */
  changed(): void {
    this.directory?.publish();
  }

  /** The other nodes that would take a realtime session now; none on one node. */
  async nodesWithRoom(): Promise<NodeEntry[]> {
    return this.directory ? this.directory.nodesWithRoom() : [];
  }

  /**
   * Refuses, while draining, work this node would run itself: sync videos and images always, jobs on
   * one node (in a cluster a job goes to the shared queue, which the other nodes serve).
   */
  refuseWhileDraining(work: "job" | "generation"): void {
    if (!this.isDraining || (work === "job" && this.clustered)) return;
    if (!this.clustered) throw unavailable("The server is shutting down and takes no new work; try again once it is back");
    throw unavailable("This node is shutting down and takes no new generations; send the request to another node of the cluster");
  }
}

/** "http://10.0.0.2:8000 (node-b, 3 free), …": where a refused client can go instead. */
export function describeNodes(nodes: NodeEntry[]): string {
  return nodes.map((node) => `${node.url} (${node.node_id}, ${node.sessions.free} free)`).join(", ");
}
