import { describeChannelConformance } from '@roster/channel-host/conformance';
import { startFakeMatrix } from './fake-matrix.js';

describeChannelConformance('matrix', { start: () => startFakeMatrix() });
