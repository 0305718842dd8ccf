-- The notes API's database beside the identity service's (compose.yaml): each service has its own.
CREATE DATABASE notes OWNER agentpass;
