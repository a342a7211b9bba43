export { describeChannelConformance } from './suite.js';
