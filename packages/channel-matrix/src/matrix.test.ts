import { describeChannelConformance } from '@roster/channels/conformance';
import { startFakeMatrix } from './fake-matrix.js';

describeChannelConformance('matrix', { start: () => startFakeMatrix() });
