// hloserve.control: ControlServiceService (server definition), ControlServiceClient, messages, enums.
export * from '../generated/hloserve/control.js';
